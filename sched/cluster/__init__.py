"""A real local control plane for tests, benchmarks and trying kubesalvo out.

``build`` compiles etcd, Kubernetes and kwok into a cache keyed by versions;
``controlplane`` starts and stops etcd, kube-apiserver, kube-controller-manager and kwok in
one folder; ``api`` creates API objects in bulk and waits on collections; ``nodes`` adds
synthetic fake nodes; ``baseline`` runs upstream kube-scheduler against it; ``cli`` is
``kubesalvo cluster``.
"""

from kubesalvo.sched.cluster.api import ApiClient, ApiError, Matching
from kubesalvo.sched.cluster.baseline import KubeScheduler, start_kube_scheduler
from kubesalvo.sched.cluster.controlplane import ControlPlane, StartError, start, stop

__all__ = [
    "ApiClient",
    "ApiError",
    "ControlPlane",
    "KubeScheduler",
    "Matching",
    "StartError",
    "start",
    "start_kube_scheduler",
    "stop",
]
