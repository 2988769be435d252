"""NodeName: a pod with ``spec.nodeName`` fits only that node.

The filter is this module's mask (:data:`FILTER_MASK`): every node but the named one
(reason code 2).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    ActionType,
    ClusterEvent,
    Code,
    EventResource,
    FilterMask,
    NodeTable,
    PerNode,
    PluginSpec,
    PodClass,
)

__all__ = ["ERR_REASON_NODE_NAME", "FILTER_MASK", "NAME"]

NAME = names.NODE_NAME
ERR_REASON_NODE_NAME = "node(s) didn't match the requested node name"
EVENTS = (ClusterEvent(EventResource.NODE, ActionType.ADD),)


def node_name(args: None, nodes: NodeTable, pod: PodClass) -> str | None:
    """The node the pod names (None: any)."""
    return pod.spec.get("nodeName") or None


def other_nodes(args: None, nodes: NodeTable, pod: PodClass) -> npt.NDArray[np.bool_] | None:
    """Every node but the one the pod names (None: it names none)."""
    wanted = node_name(args, nodes, pod)
    return None if wanted is None else ~nodes.name_in({wanted})


# Its rows depend on spec.nodeName only: part of the static rows' signature.
FILTER_MASK = FilterMask(ERR_REASON_NODE_NAME, other_nodes, node_name, True)


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.node_name import PER_NODE

    return PER_NODE


SPEC = PluginSpec(
    NAME,
    frozenset({FILTER}),
    reasons={ERR_REASON_NODE_NAME: Code.UNSCHEDULABLE_AND_UNRESOLVABLE},
    events=EVENTS,
    filter_masks=(FILTER_MASK,),
    kernel_codes={ERR_REASON_NODE_NAME: "NODE_NAME"},
    per_node=_per_node,
)
