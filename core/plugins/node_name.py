"""NodeName: a pod with ``spec.nodeName`` fits only that node (static mask, code 2)."""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    ActionType,
    ClusterEvent,
    Code,
    EventResource,
    PluginSpec,
)

NAME = names.NODE_NAME
ERR_REASON_NODE_NAME = "node(s) didn't match the requested node name"
EVENTS = (ClusterEvent(EventResource.NODE, ActionType.ADD),)
SPEC = PluginSpec(
    NAME,
    frozenset({FILTER}),
    reasons={ERR_REASON_NODE_NAME: Code.UNSCHEDULABLE_AND_UNRESOLVABLE},
    events=EVENTS,
)
