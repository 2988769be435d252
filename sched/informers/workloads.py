"""The workloads whose selectors give pods their default spread constraints.

kube-scheduler's PodTopologySpread gives a pod without constraints of its own the
profile's default constraints (System: zone maxSkew 5 and hostname maxSkew 3,
ScheduleAnyway; or PodTopologySpreadArgs' List), over the pods selected by the pod's
Services and its controller (ReplicationController, ReplicaSet, StatefulSet). The four
informers here keep those objects (only namespace, name, uid and selector are decoded);
``Workloads`` holds them as the API dicts ``place_burst(workloads=...)`` takes, indexed by
namespace and updated per change, so that a burst takes the few lists of its own
namespaces instead of every workload of the cluster.

RBAC: the scheduler needs list and watch on ``services``, ``replicationcontrollers`` (core)
and ``replicasets``, ``statefulsets`` (apps), as kube-scheduler's ClusterRole grants. When
one of them is forbidden, ``kubesalvo run`` logs one warning and runs without default
spreading (a partial set would spread over wrong selectors) rather than stop.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesalvo.sched.informers.models import (
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    Workload,
    to_api_dict,
)
from kubesalvo.sched.informers.store import DELETED, SYNCED, Change
from kubesalvo.sched.informers.watch import Resource

__all__ = [
    "REPLICASETS",
    "REPLICATIONCONTROLLERS",
    "SERVICES",
    "STATEFULSETS",
    "WORKLOAD_KINDS",
    "Workloads",
]

SERVICES = Resource("services", "/api/v1/services", Service)
REPLICATIONCONTROLLERS = Resource(
    "replicationcontrollers", "/api/v1/replicationcontrollers", ReplicationController
)
REPLICASETS = Resource("replicasets", "/apis/apps/v1/replicasets", ReplicaSet)
STATEFULSETS = Resource("statefulsets", "/apis/apps/v1/statefulsets", StatefulSet)

# Each resource with the ``kind`` core matches owner references against (list items
# carry no kind of their own).
WORKLOAD_KINDS: tuple[tuple[Resource[Any], str], ...] = (
    (SERVICES, "Service"),
    (REPLICATIONCONTROLLERS, "ReplicationController"),
    (REPLICASETS, "ReplicaSet"),
    (STATEFULSETS, "StatefulSet"),
)


class Workloads:
    """The workloads as API dicts by namespace, kept current by the informers' changes."""

    def __init__(self) -> None:
        # namespace -> (kind, name) -> API dict
        self._by_namespace: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        # namespace -> its dicts as a list, made when asked and dropped on a change there
        self._lists: dict[str, list[dict[str, Any]]] = {}

    def __len__(self) -> int:
        return sum(len(objects) for objects in self._by_namespace.values())

    def handler(self, kind: str) -> Any:
        """The informer handler of one kind."""

        def apply(change: Change[Workload]) -> None:
            obj = change.obj
            if change.type == SYNCED or obj is None:
                return
            namespace = obj.metadata.namespace or "default"
            key = (kind, obj.metadata.name)
            self._lists.pop(namespace, None)
            if change.type == DELETED:
                objects = self._by_namespace.get(namespace)
                if objects is not None:
                    objects.pop(key, None)
                    if not objects:
                        del self._by_namespace[namespace]
                return
            entry = to_api_dict(obj)
            entry["kind"] = kind
            self._by_namespace.setdefault(namespace, {})[key] = entry

        return apply

    def in_namespaces(self, namespaces: Iterable[str]) -> list[dict[str, Any]]:
        """Every workload of these namespaces (only those can select a pod in them)."""
        found: list[dict[str, Any]] = []
        for namespace in namespaces:
            listed = self._lists.get(namespace)
            if listed is None:
                objects = self._by_namespace.get(namespace)
                if objects is None:
                    continue
                listed = self._lists[namespace] = list(objects.values())
            found.extend(listed)
        return found
