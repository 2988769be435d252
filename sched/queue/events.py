"""Cluster events, and which of them could make a pod rejected by a plugin schedulable.

kube-scheduler's plugins declare the cluster events after which a pod they rejected is
worth retrying (``EnqueueExtensions.EventsToRegister``); the queue parks an unschedulable
pod together with the plugins that rejected it and moves it back only on an event one of
those plugins registered. :data:`PLUGIN_EVENTS` holds those registrations as v1.34 makes
them with queueing hints on (GA in v1.34). kube-scheduler also runs a per-plugin hint
function on each matching event to skip events that cannot help (a new node too small
for the pod); ``hints`` has kubesalvo's for the busiest filters, and a plugin without one
is retried on every matching event.

An event is a resource and a set of action bits; it matches a registration when the
resources agree (or either is the wildcard) and the action bits overlap.
``node_update_events`` and ``pod_update_events`` derive the events of an update from the
old and new objects (the informers' typed models), as ``framework/events.go`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import IntFlag, StrEnum
from typing import Any

import msgspec

from kubesalvo.core import names
from kubesalvo.core.resources import pod_requests

__all__ = [
    "ASSIGNED_POD_ADD",
    "ASSIGNED_POD_DELETE",
    "FORCE_ACTIVATE",
    "NODE_ADD",
    "NODE_DELETE",
    "PLUGIN_EVENTS",
    "UNSCHEDULABLE_TIMEOUT",
    "ActionType",
    "ClusterEvent",
    "HintFn",
    "Resource",
    "node_update_events",
    "pod_update_events",
    "rejecting_plugins",
]


class ActionType(IntFlag):
    """What happened to an object; the Update* bits say what an update changed."""

    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    # A change of taints or of spec.unschedulable (both decide NodeUnschedulable-like fits).
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    UPDATE_POD_SCALE_DOWN = 1 << 8
    UPDATE_POD_TOLERATION = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 11
    # Any other update of a resource that has no finer bits.
    UPDATE_OTHER = 1 << 12

    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_OTHER
    )
    ALL = ADD | DELETE | UPDATE


class Resource(StrEnum):
    POD = "Pod"
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    VOLUME_ATTACHMENT = "VolumeAttachment"
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    WILDCARD = "*"


@dataclass(frozen=True)
class ClusterEvent:
    resource: Resource
    action: ActionType
    label: str = ""

    def matches(self, registered: ClusterEvent) -> bool:
        if Resource.WILDCARD in (self.resource, registered.resource):
            return True
        return self.resource == registered.resource and bool(self.action & registered.action)

    def __str__(self) -> str:
        return self.label or _label(self.resource, self.action)


def _label(resource: Resource, action: ActionType) -> str:
    """kube-scheduler's event label: the resource, then the action in CamelCase."""
    words = (action.name or "Unknown").split("_")
    return resource.value + "".join(w.capitalize() for w in words)


# A hint: given the parked pod, the event and the old and new objects, may it help?
HintFn = Callable[[Any, ClusterEvent, Any, Any], bool]

A = ActionType
R = Resource

NODE_ADD = ClusterEvent(R.NODE, A.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(R.NODE, A.DELETE, "NodeDelete")
# A pod bound to a node appeared, or went away (deleted, or finished: Succeeded/Failed
# pods leave the node's accounting as deleted ones do).
ASSIGNED_POD_ADD = ClusterEvent(R.POD, A.ADD, "AssignedPodAdd")
ASSIGNED_POD_DELETE = ClusterEvent(R.POD, A.DELETE, "AssignedPodDelete")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(R.WILDCARD, A.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(R.WILDCARD, A.ALL, "ForceActivate")


def _ev(resource: Resource, action: ActionType) -> ClusterEvent:
    return ClusterEvent(resource, action)


# Plugin -> the events after which a pod it rejected may fit (kube-scheduler v1.34).
PLUGIN_EVENTS: dict[str, tuple[ClusterEvent, ...]] = {
    names.SCHEDULING_GATES: (_ev(R.POD, A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),),
    names.NODE_UNSCHEDULABLE: (
        _ev(R.NODE, A.ADD | A.UPDATE_NODE_TAINT),
        _ev(R.POD, A.UPDATE_POD_TOLERATION),
    ),
    names.NODE_NAME: (_ev(R.NODE, A.ADD),),
    names.TAINT_TOLERATION: (
        _ev(R.NODE, A.ADD | A.UPDATE_NODE_TAINT),
        _ev(R.POD, A.UPDATE_POD_TOLERATION),
    ),
    names.NODE_AFFINITY: (_ev(R.NODE, A.ADD | A.UPDATE_NODE_LABEL),),
    names.NODE_PORTS: (_ev(R.POD, A.DELETE), _ev(R.NODE, A.ADD)),
    # In-place pod resize is on in v1.34, so a pod scaling down frees room as well.
    names.NODE_RESOURCES_FIT: (
        _ev(R.POD, A.DELETE | A.UPDATE_POD_SCALE_DOWN),
        _ev(R.NODE, A.ADD | A.UPDATE_NODE_ALLOCATABLE),
    ),
    names.VOLUME_RESTRICTIONS: (
        _ev(R.POD, A.DELETE),
        _ev(R.NODE, A.ADD),
        _ev(R.PERSISTENT_VOLUME_CLAIM, A.ADD),
    ),
    names.NODE_VOLUME_LIMITS: (
        _ev(R.CSI_NODE, A.ADD | A.UPDATE_OTHER),
        _ev(R.POD, A.DELETE),
        _ev(R.PERSISTENT_VOLUME_CLAIM, A.ADD),
        _ev(R.VOLUME_ATTACHMENT, A.DELETE),
    ),
    names.VOLUME_BINDING: (
        _ev(R.STORAGE_CLASS, A.ADD | A.UPDATE_OTHER),
        _ev(R.PERSISTENT_VOLUME_CLAIM, A.ADD | A.UPDATE_OTHER),
        _ev(R.PERSISTENT_VOLUME, A.ADD | A.UPDATE_OTHER),
        _ev(R.NODE, A.ADD | A.UPDATE_NODE_LABEL),
        _ev(R.CSI_NODE, A.ADD | A.UPDATE_OTHER),
        _ev(R.CSI_DRIVER, A.UPDATE_OTHER),
        _ev(R.CSI_STORAGE_CAPACITY, A.ADD | A.UPDATE_OTHER),
    ),
    names.VOLUME_ZONE: (
        _ev(R.STORAGE_CLASS, A.ADD),
        _ev(R.NODE, A.ADD | A.UPDATE_NODE_LABEL),
        _ev(R.PERSISTENT_VOLUME_CLAIM, A.ADD | A.UPDATE_OTHER),
        _ev(R.PERSISTENT_VOLUME, A.ADD | A.UPDATE_OTHER),
    ),
    names.POD_TOPOLOGY_SPREAD: (
        _ev(R.POD, A.ADD | A.UPDATE_POD_LABEL | A.UPDATE_POD_TOLERATION | A.DELETE),
        _ev(R.NODE, A.ADD | A.DELETE | A.UPDATE_NODE_LABEL | A.UPDATE_NODE_TAINT),
    ),
    names.INTER_POD_AFFINITY: (
        _ev(R.POD, A.ADD | A.UPDATE_POD_LABEL | A.DELETE),
        _ev(R.NODE, A.ADD | A.UPDATE_NODE_LABEL),
    ),
    # Asynchronous preemption (beta, on in v1.34): a victim's deletion retries the pod.
    names.DEFAULT_PREEMPTION: (_ev(R.POD, A.DELETE),),
    names.DYNAMIC_RESOURCES: (
        _ev(R.NODE, A.ADD | A.UPDATE_NODE_LABEL | A.UPDATE_NODE_ALLOCATABLE),
        _ev(R.RESOURCE_CLAIM, A.ADD | A.UPDATE_OTHER),
        _ev(R.POD, A.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
        _ev(R.DEVICE_CLASS, A.ADD | A.UPDATE_OTHER),
        _ev(R.RESOURCE_SLICE, A.ADD | A.UPDATE_OTHER),
    ),
    # kubesalvo: a gang short of its minimum may complete when members arrive or when
    # room appears for the members that did not fit.
    names.COSCHEDULING: (
        _ev(R.POD, A.ADD | A.DELETE | A.UPDATE_POD_LABEL),
        _ev(R.NODE, A.ADD | A.UPDATE_NODE_ALLOCATABLE),
    ),
}


def plugins_interested(
    event: ClusterEvent, plugins: Iterable[str], registry: Mapping[str, tuple[ClusterEvent, ...]]
) -> list[str]:
    """The plugins among ``plugins`` that registered an event matching ``event``."""
    return [p for p in plugins if any(event.matches(r) for r in registry.get(p, ()))]


def node_update_events(old: Any, new: Any) -> list[ClusterEvent]:
    """The events of a node update (informers' ``Node`` models); empty if nothing counts."""
    action = A(0)
    if old.spec.unschedulable != new.spec.unschedulable or old.spec.taints != new.spec.taints:
        action |= A.UPDATE_NODE_TAINT
    if old.status.allocatable != new.status.allocatable:
        action |= A.UPDATE_NODE_ALLOCATABLE
    if old.metadata.labels != new.metadata.labels:
        action |= A.UPDATE_NODE_LABEL
    if old.status.conditions != new.status.conditions:
        action |= A.UPDATE_NODE_CONDITION
    if old.metadata.annotations != new.metadata.annotations:
        action |= A.UPDATE_NODE_ANNOTATION
    return [ClusterEvent(R.NODE, a, _label(R.NODE, a)) for a in A if a in action]


def _scaled_down(old: Any, new: Any) -> bool:
    try:
        before = pod_requests(msgspec.to_builtins(old))
        after = pod_requests(msgspec.to_builtins(new))
    except ValueError:
        return False  # a quantity beyond int64 (the API server stores 1e400): no scale-down
    return any(after.get(name, 0) < amount for name, amount in before.items())


def pod_update_events(old: Any, new: Any) -> list[ClusterEvent]:
    """The events of a pod update (informers' ``Pod`` models).

    Status-only changes give none; a change the finer bits do not name gives
    ``UPDATE_OTHER``, which matches no plugin's registration but is still reported.
    """
    action = A(0)
    if old.metadata.labels != new.metadata.labels:
        action |= A.UPDATE_POD_LABEL
    if _scaled_down(old, new):
        action |= A.UPDATE_POD_SCALE_DOWN
    if old.spec.scheduling_gates and not new.spec.scheduling_gates:
        action |= A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    if old.spec.tolerations != new.spec.tolerations:
        action |= A.UPDATE_POD_TOLERATION
    if not action and (
        old.spec != new.spec or old.metadata.annotations != new.metadata.annotations
    ):
        action = A.UPDATE_OTHER
    return [ClusterEvent(R.POD, a, _label(R.POD, a)) for a in A if a in action]


# Failure reason -> the plugin that gives it (kube-scheduler's texts, from core.names).
_REASON_PLUGIN: dict[str, str] = {
    names.ERR_REASON_UNSCHEDULABLE: names.NODE_UNSCHEDULABLE,
    names.ERR_REASON_NODE_NAME: names.NODE_NAME,
    names.ERR_REASON_UNTOLERATED_TAINT: names.TAINT_TOLERATION,
    names.ERR_REASON_NODE_AFFINITY: names.NODE_AFFINITY,
    names.ERR_REASON_ENFORCED_NODE_AFFINITY: names.NODE_AFFINITY,
    names.ERR_REASON_NODE_AFFINITY_CONFLICT: names.NODE_AFFINITY,
    names.ERR_REASON_NODE_PORTS: names.NODE_PORTS,
    names.ERR_REASON_TOO_MANY_PODS: names.NODE_RESOURCES_FIT,
    names.ERR_REASON_SPREAD_CONSTRAINTS: names.POD_TOPOLOGY_SPREAD,
    names.ERR_REASON_SPREAD_MISSING_LABEL: names.POD_TOPOLOGY_SPREAD,
    names.ERR_REASON_EXISTING_ANTI_AFFINITY: names.INTER_POD_AFFINITY,
    names.ERR_REASON_AFFINITY: names.INTER_POD_AFFINITY,
    names.ERR_REASON_ANTI_AFFINITY: names.INTER_POD_AFFINITY,
}
_NARROWED = "node(s) didn't satisfy plugin(s) ["


def rejecting_plugins(reasons: Iterable[str]) -> frozenset[str]:
    """The plugins behind the failure reasons of an attempt, for ``add_unschedulable``.

    A reason kubesalvo does not know maps to no plugin; if none is known the queue
    treats the failure as an error and retries after the error backoff.
    """
    plugins: set[str] = set()
    for reason in reasons:
        plugin = _REASON_PLUGIN.get(reason)
        if plugin is not None:
            plugins.add(plugin)
        elif reason.startswith(names.insufficient_resource("")):
            plugins.add(names.NODE_RESOURCES_FIT)
        elif reason.startswith(names.ERR_REASON_GANG_MIN_AVAILABLE):
            plugins.add(names.COSCHEDULING)
        elif reason.startswith(_NARROWED) and reason.endswith("]"):
            plugins.update(reason[len(_NARROWED) : -1].split())
        elif (rejector := names.prefilter_rejector(reason)) is not None:
            plugins.add(rejector)  # e.g. InterPodAffinity's "parsing pod: ..."
    return frozenset(plugins)
