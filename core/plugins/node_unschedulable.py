"""NodeUnschedulable: nodes with ``spec.unschedulable`` take only pods that tolerate it.

The filter is this module's mask (:data:`FILTER_MASK`): the cordoned nodes, unless the
pod tolerates the taint :data:`UNSCHEDULABLE_TAINT` (which the node lifecycle controller
adds to cordoned nodes; kube-scheduler checks the field itself, so the rule holds before
the taint appears). Reason code 1.
"""

from __future__ import annotations

from typing import Any

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
    HintFn,
    NodeTable,
    PerNode,
    PluginSpec,
    PodClass,
    tolerates,
)

__all__ = ["ERR_REASON_UNSCHEDULABLE", "FILTER_MASK", "NAME", "UNSCHEDULABLE_TAINT"]

NAME = names.NODE_UNSCHEDULABLE
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
# The taint a pod must tolerate to land on an unschedulable node.
UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
EVENTS = (
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
    ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
)


def tolerates_cordon(args: None, nodes: NodeTable, pod: PodClass) -> bool:
    """Whether one of the pod's tolerations tolerates :data:`UNSCHEDULABLE_TAINT`."""
    tolerations: Any = pod.spec.get("tolerations") or ()
    return any(tolerates(t, UNSCHEDULABLE_TAINT) for t in tolerations)


def cordoned(args: None, nodes: NodeTable, pod: PodClass) -> npt.NDArray[np.bool_] | None:
    """The cordoned nodes, for a pod that does not tolerate them (None: no node fails)."""
    if tolerates_cordon(args, nodes, pod):
        return None
    rows = nodes.unschedulable()
    return rows if rows.any() else None


# Its rows depend on the tolerations only: part of the static rows' signature.
FILTER_MASK = FilterMask(ERR_REASON_UNSCHEDULABLE, cordoned, tolerates_cordon, True)


def _queueing_hint() -> HintFn:
    """Its queueing hint, which reads the per-node logic that imports this module."""
    from kubesalvo.core.pernode.node_unschedulable_hint import queueing_hint

    return queueing_hint


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.node_unschedulable import PER_NODE

    return PER_NODE


SPEC = PluginSpec(
    NAME,
    frozenset({FILTER}),
    reasons={ERR_REASON_UNSCHEDULABLE: Code.UNSCHEDULABLE_AND_UNRESOLVABLE},
    events=EVENTS,
    filter_masks=(FILTER_MASK,),
    queueing_hint=_queueing_hint,
    kernel_codes={ERR_REASON_UNSCHEDULABLE: "UNSCHEDULABLE"},
    per_node=_per_node,
)
