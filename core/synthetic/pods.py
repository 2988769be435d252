"""Pod classes and the objects around them: namespaces and priority classes.

A ``PodClass`` is one scheduling signature: every replica built from it differs only in its
name. Replicas get their own top-level dict, ``metadata`` (with their own ``labels``) and
``spec``, so setting ``spec.nodeName`` or adding a label on one pod never touches another.
The nested parts of the spec that describe the signature (``containers``,
``initContainers``, ``tolerations``, ``nodeSelector``, ``affinity``,
``topologySpreadConstraints``) are one shared object per class: building 100,000 pods then
costs a few small dicts per pod instead of a deep tree each. Treat those parts as read-only,
or ``copy.deepcopy`` a pod before changing them. (A YAML dump shows the sharing as anchors.)

Pods carry ReplicaSet-, Job- and gang-style labels but no ``ownerReferences``: created on a
real API server, a reference to an owner that does not exist would let the garbage collector
delete them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core.synthetic import units

# The alphabet kube uses for generated name suffixes (no vowels, no look-alike characters).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

WORKLOAD_LABEL = "kubesalvo.io/workload"
GANG_NAME_LABEL = "podGroup"
# scheduler-plugins' label for the same thing; kubesalvo accepts both.
GANG_NAME_LABEL_X_K8S = "scheduling.x-k8s.io/pod-group"
GANG_MIN_LABEL = "minAvailable"
GANG_PRIORITY_LABEL = "groupPriority"


def name_suffix(index: int, width: int = 5) -> str:
    """A kube-style suffix, unique for each index below 27**width."""
    chars = []
    base = len(_SUFFIX_ALPHABET)
    for _ in range(width):
        index, digit = divmod(index, base)
        chars.append(_SUFFIX_ALPHABET[digit])
    return "".join(reversed(chars))


@dataclass(frozen=True)
class PriorityClass:
    name: str
    value: int
    preemption_policy: str = "PreemptLowerPriority"
    description: str = ""

    def to_object(self) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": self.name},
            "value": self.value,
            "preemptionPolicy": self.preemption_policy,
            "globalDefault": False,
            "description": self.description,
        }


CRITICAL = PriorityClass("critical-service", 1_000_000, description="user-facing tier 0")
HIGH = PriorityClass("high-priority", 10_000, description="production services")
BATCH_LOW = PriorityClass(
    "batch-low", -100, preemption_policy="Never", description="best-effort batch work"
)
PRIORITY_CLASSES: tuple[PriorityClass, ...] = (CRITICAL, HIGH, BATCH_LOW)

# Namespaces with the labels that namespaceSelector terms in the workloads select on.
NAMESPACES: dict[str, dict[str, str]] = {
    "team-a": {"team": "a", "tier": "frontend"},
    "team-b": {"team": "b", "tier": "frontend"},
    "team-c": {"team": "c", "tier": "backend"},
    "team-d": {"team": "d", "tier": "backend"},
    "team-e": {"team": "e", "tier": "data"},
    "batch": {"tier": "batch"},
    "ml": {"tier": "ml"},
    "infra": {"tier": "infra"},
}


def namespace_objects(names: list[str] | None = None) -> list[dict[str, Any]]:
    """Namespace objects, with the ``kubernetes.io/metadata.name`` label the API server adds."""
    chosen = sorted(NAMESPACES) if names is None else names
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/metadata.name": name, **NAMESPACES.get(name, {})},
            },
        }
        for name in chosen
    ]


def priority_class_objects() -> list[dict[str, Any]]:
    return [pc.to_object() for pc in PRIORITY_CLASSES]


def container(
    name: str,
    image: str,
    cpu_millis: int,
    memory: int,
    *,
    cpu_limit_millis: int | None = None,
    memory_limit: int | None = None,
    extra_requests: dict[str, str] | None = None,
    host_port: int | None = None,
) -> dict[str, Any]:
    """A container with requests (and limits when given); extended resources go in both."""
    requests = {"cpu": units.cpu(cpu_millis), "memory": units.binary(memory)}
    limits: dict[str, str] = {}
    if cpu_limit_millis is not None:
        limits["cpu"] = units.cpu(cpu_limit_millis)
    if memory_limit is not None:
        limits["memory"] = units.binary(memory_limit)
    for resource, amount in (extra_requests or {}).items():
        requests[resource] = amount
        # Extended resources cannot be overcommitted: the API requires limits == requests.
        if "/" in resource and not resource.startswith("kubernetes.io/"):
            limits[resource] = amount
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = limits
    result: dict[str, Any] = {"name": name, "image": image, "resources": resources}
    if host_port is not None:
        result["ports"] = [{"containerPort": host_port, "hostPort": host_port, "protocol": "TCP"}]
    return result


@dataclass
class PodClass:
    """One scheduling signature and the labels its replicas share."""

    name: str
    namespace: str
    labels: dict[str, str]
    containers: list[dict[str, Any]]
    scheduler_name: str
    workload: str
    init_containers: list[dict[str, Any]] | None = None
    priority_class: PriorityClass | None = None
    tolerations: list[dict[str, Any]] | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    spread: list[dict[str, Any]] | None = None
    restart_policy: str = "Always"
    annotations: dict[str, str] = field(default_factory=dict)

    def spec(self) -> dict[str, Any]:
        """The spec every replica starts from (its nested values are shared, read-only)."""
        spec: dict[str, Any] = {
            "schedulerName": self.scheduler_name,
            "containers": self.containers,
            "restartPolicy": self.restart_policy,
            "terminationGracePeriodSeconds": 30,
        }
        if self.init_containers:
            spec["initContainers"] = self.init_containers
        if self.priority_class is not None:
            spec["priorityClassName"] = self.priority_class.name
            spec["priority"] = self.priority_class.value
            spec["preemptionPolicy"] = self.priority_class.preemption_policy
        if self.tolerations:
            spec["tolerations"] = self.tolerations
        if self.node_selector:
            spec["nodeSelector"] = self.node_selector
        if self.affinity:
            spec["affinity"] = self.affinity
        if self.spread:
            spec["topologySpreadConstraints"] = self.spread
        return spec

    def replicas(self, count: int) -> list[dict[str, Any]]:
        """``count`` pods named ``<class name>-<suffix>``."""
        spec = self.spec()
        labels = {**self.labels, WORKLOAD_LABEL: self.workload}
        pods = []
        for index in range(count):
            metadata: dict[str, Any] = {
                "name": f"{self.name}-{name_suffix(index)}",
                "namespace": self.namespace,
                "labels": dict(labels),
            }
            if self.annotations:
                metadata["annotations"] = dict(self.annotations)
            pods.append(
                {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": dict(spec)}
            )
        return pods
