"""DynamicResources: resource claims (DRA).

kubesalvo does not allocate devices yet. Binding a pod with resource claims anyway would
put it on a node whose devices it may not get, with no allocation written to its claims:
instead its PreFilter rejects every such pod, which stays pending with
:data:`NOT_ALLOCATED` until the allocator is done. Pods without claims are scheduled as
before, and this plugin's PostFilter part of their message is rendered.
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

__all__ = ["NAME", "NOT_ALLOCATED", "NO_NEW_CLAIMS_TO_DEALLOCATE", "DynamicResourcesArgs"]

NAME = names.DYNAMIC_RESOURCES
# Its PostFilter's answer for a pod without resource claims. With the default profile
# both DynamicResources and DefaultPreemption run there, and their reasons are joined by
# ", ": "... 2 node(s) had untolerated taint(s). no new claims to deallocate, preemption:
# 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
NO_NEW_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
# kubesalvo's own PreFilter rejection of a pod with resource claims (no upstream text: an
# upstream scheduler allocates them).
NOT_ALLOCATED = "kubesalvo does not allocate resource claims yet (DynamicResources)"


@dataclass(frozen=True)
class DynamicResourcesArgs:
    """DynamicResourcesArgs: the Filter's time limit, in seconds."""

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
    reasons={NOT_ALLOCATED: Code.UNSCHEDULABLE_AND_UNRESOLVABLE},
    events=EVENTS,
)
