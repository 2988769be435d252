"""NodePorts: a pod's host ports must be free on the node (dynamic, in the kernel, code 6)."""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    PRE_FILTER,
    ActionType,
    ClusterEvent,
    Code,
    EventResource,
    PerNode,
    PluginSpec,
)

NAME = names.NODE_PORTS
ERR_REASON_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
EVENTS = (
    ClusterEvent(EventResource.POD, ActionType.DELETE),
    ClusterEvent(EventResource.NODE, ActionType.ADD),
)


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.node_ports import PER_NODE

    return PER_NODE


SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, FILTER}),
    reasons={ERR_REASON_NODE_PORTS: Code.UNSCHEDULABLE},
    events=EVENTS,
    kernel_codes={ERR_REASON_NODE_PORTS: "PORTS"},
    per_node=_per_node,
)
