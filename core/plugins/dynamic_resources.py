"""DynamicResources: resource claims (DRA), with kube-scheduler v1.34's semantics and texts.

Its behaviour is in ``core/dra``: ``pod.prefilter`` and ``PodDevices.filter_rows`` (the
PreFilter and the Filter, the latter a per-node mask with two reason codes),
``allocator`` (the structured-parameters allocator) and ``selectors`` (CEL). The runtime
places a pod with claims alone, after the burst's other pods, with that mask; Reserve
holds its devices for the rest of the burst and PreBind writes the claims' allocation
and reservedFor before the binding.

Without the runtime's DRA objects (``kubesalvo simulate``, core's callers that give no
``devices``), a pod with claims is rejected by the PreFilter with :data:`NOT_ALLOCATED`
rather than bound without its devices.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    POST_FILTER,
    PRE_BIND,
    PRE_ENQUEUE,
    PRE_FILTER,
    RESERVE,
    ActionType,
    ClusterEvent,
    Code,
    EventResource,
    FieldError,
    PluginSpec,
    check,
    non_negative,
)

__all__ = [
    "CANNOT_ALLOCATE",
    "CLAIM_IN_USE",
    "CLAIM_NOT_CREATED",
    "NAME",
    "NOT_ALLOCATED",
    "NOT_AVAILABLE_ON_NODE",
    "NO_NEW_CLAIMS_TO_DEALLOCATE",
    "STILL_NOT_SCHEDULABLE",
    "TIMED_OUT",
    "DynamicResourcesArgs",
    "claim_being_allocated",
    "claim_being_deleted",
    "claim_not_for_pod",
    "claim_not_found",
    "class_missing",
    "prefilter_error",
]

NAME = names.DYNAMIC_RESOURCES
# Its PostFilter's answer for a pod without resource claims. With the default profile
# both DynamicResources and DefaultPreemption run there, and their reasons are joined by
# ", ": "... 2 node(s) had untolerated taint(s). no new claims to deallocate, preemption:
# 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
NO_NEW_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
# Its PostFilter's answer for a pod with claims when no allocated claim of it could be
# deallocated to help (kubesalvo never deallocates: see docs/plugins.md).
STILL_NOT_SCHEDULABLE = "still not schedulable"
# kubesalvo's own PreFilter rejection of a pod with resource claims when the caller has no
# DRA objects to allocate from (no upstream text: an upstream scheduler has them).
NOT_ALLOCATED = "kubesalvo does not allocate resource claims yet (DynamicResources)"
# Filter, per node.
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE_ON_NODE = "resourceclaim not available on the node"
# The allocator ran longer than the args' filterTimeout on a node (v1.34: unresolvable).
TIMED_OUT = "timed out trying to allocate devices"
# PreFilter, for every node (UnschedulableAndUnresolvable).
CLAIM_IN_USE = "resourceclaim in use"
CLAIM_NOT_CREATED = "ResourceClaim not created yet"


def claim_not_found(name: str) -> str:
    """The claim lister's NotFound error, as kube-scheduler reports it."""
    return f'resourceclaim.resource.k8s.io "{name}" not found'


def claim_being_deleted(name: str) -> str:
    return f'resourceclaim "{name}" is being deleted'


def claim_not_for_pod(claim: str, namespace: str, pod: str) -> str:
    """A claim named by the pod's status for a template, owned by another pod."""
    return f"ResourceClaim {claim} was not created for pod {namespace}/{pod} (pod is not owner)"


def claim_being_allocated(claim: str) -> str:
    """A claim whose allocation an earlier pod reserved and has not written yet."""
    return f"resource claim {claim} is in the process of being allocated"


def class_missing(request: str, device_class: str) -> str:
    return f"request {request}: device class {device_class} does not exist"


def prefilter_error(error: str) -> str:
    """A PreFilter error, which fails the attempt (no node is tried)."""
    return f'running PreFilter plugin "{NAME}": {error}'


@dataclass(frozen=True)
class DynamicResourcesArgs:
    """DynamicResourcesArgs: the Filter's time limit per node, in seconds (0: none)."""

    filter_timeout_seconds: float = 10.0

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        return non_negative(
            "filterTimeout", self.filter_timeout_seconds, "must be zero or positive"
        )


EVENTS = (
    ClusterEvent(
        EventResource.NODE,
        ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE,
    ),
    ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE_OTHER),
    ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
    ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE_OTHER),
    ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE_OTHER),
)
SPEC = PluginSpec(
    NAME,
    frozenset({PRE_ENQUEUE, PRE_FILTER, FILTER, POST_FILTER, RESERVE, PRE_BIND}),
    args=DynamicResourcesArgs,
    reasons={
        NOT_ALLOCATED: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        CANNOT_ALLOCATE: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        NOT_AVAILABLE_ON_NODE: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        TIMED_OUT: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        CLAIM_IN_USE: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    },
    events=EVENTS,
)
