"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score.

The filter is this module's mask (:data:`FILTER_MASK`): per node, whether it has a
NoSchedule or NoExecute taint the pod does not tolerate. The score is its channel
(:data:`SCORE_CHANNEL`): per node, the count of PreferNoSchedule taints the pod does not
tolerate, which the kernel normalises over the feasible nodes reversed (the node with the
most such taints scores 0, a node with none 100).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    PRE_SCORE,
    SCORE,
    ActionType,
    ClusterEvent,
    Code,
    EventResource,
    FilterMask,
    HintFn,
    NodeTable,
    Normalise,
    PerNode,
    PluginSpec,
    PodClass,
    ScoreChannel,
    tolerates,
)

__all__ = [
    "ERR_REASON_UNTOLERATED_TAINT",
    "FILTER_MASK",
    "NAME",
    "SCORE_CHANNEL",
    "prefer_no_schedule_tolerations",
    "tolerates",
    "untolerated",
    "untolerated_prefer_no_schedule",
]

NAME = names.TAINT_TOLERATION
# v1.34.4 no longer names the taint (a security fix, kubernetes#134740, backported to the
# 1.34 patch releases; earlier ones wrote "node(s) had untolerated taint {key: value}"):
# the taint is only logged.
ERR_REASON_UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
EVENTS = (
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
    ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
)


def prefer_no_schedule_tolerations(
    args: None, nodes: NodeTable, pod: PodClass
) -> list[Mapping[str, Any]]:
    """The pod's tolerations the score looks at: PreferNoSchedule or any effect, and of a
    key some node's taint has (the others tolerate nothing, and leaving them out lets pods
    that differ only there share one row of counts)."""
    return _of_known_keys(nodes, pod, _scored_effect)


def _scored_effect(effect: Any) -> bool:
    return not effect or effect == PREFER_NO_SCHEDULE


def untolerated_prefer_no_schedule(
    args: None, nodes: NodeTable, pod: PodClass
) -> npt.NDArray[np.int64]:
    """Per node, its PreferNoSchedule taints that none of the pod's tolerations tolerates
    (the plugin's raw score, upstream's countIntolerableTaintsPreferNoSchedule)."""
    tolerations = prefer_no_schedule_tolerations(args, nodes, pod)
    return nodes.taint_counts(
        lambda taint: (
            taint[2] == PREFER_NO_SCHEDULE and not any(tolerates(t, taint) for t in tolerations)
        )
    )


_HARD_EFFECTS = ("NoSchedule", "NoExecute")


def hard_tolerations(args: None, nodes: NodeTable, pod: PodClass) -> list[Mapping[str, Any]]:
    """The pod's tolerations the filter looks at: not PreferNoSchedule, and of a key some
    node's taint has (or empty)."""
    return _of_known_keys(nodes, pod, _filtered_effect)


def _filtered_effect(effect: Any) -> bool:
    return effect != PREFER_NO_SCHEDULE


def _of_known_keys(
    nodes: NodeTable, pod: PodClass, wanted: Callable[[Any], bool]
) -> list[Mapping[str, Any]]:
    """The pod's tolerations whose effect is ``wanted`` and whose key is empty or some
    node's taint's (the others tolerate nothing here)."""
    tolerations: Sequence[Mapping[str, Any]] = pod.spec.get("tolerations") or ()
    kept: list[Mapping[str, Any]] = []
    keys = None
    for toleration in tolerations:  # a loop: this runs once per class of a burst
        if not wanted(toleration.get("effect")):
            continue
        key = toleration.get("key")
        if key:
            if keys is None:
                keys = nodes.taint_keys()
            if key not in keys:
                continue
        kept.append(toleration)
    return kept


def untolerated(args: None, nodes: NodeTable, pod: PodClass) -> npt.NDArray[np.bool_] | None:
    """The nodes with a NoSchedule or NoExecute taint none of the pod's tolerations
    tolerates (None: no node has one)."""
    tolerations = hard_tolerations(args, nodes, pod)
    counts = nodes.taint_counts(
        lambda taint: (
            taint[2] in _HARD_EFFECTS and not any(tolerates(t, taint) for t in tolerations)
        )
    )
    return counts > 0 if counts.any() else None


# Its rows depend on the tolerations only: part of the static rows' signature.
FILTER_MASK = FilterMask(ERR_REASON_UNTOLERATED_TAINT, untolerated, hard_tolerations, True)

# More untolerated taints score less: reversed over the feasible nodes' largest count.
SCORE_CHANNEL = ScoreChannel(
    Normalise.REVERSE_MAX,
    untolerated_prefer_no_schedule,
    prefer_no_schedule_tolerations,
    reads="tolerations",
)


def _queueing_hint() -> HintFn:
    """Its queueing hint, which reads the per-node logic that imports this module."""
    from kubesalvo.core.pernode.taint_toleration_hint import queueing_hint

    return queueing_hint


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.taint_toleration import PER_NODE

    return PER_NODE


SPEC = PluginSpec(
    NAME,
    frozenset({FILTER, PRE_SCORE, SCORE}),
    reasons={ERR_REASON_UNTOLERATED_TAINT: Code.UNSCHEDULABLE_AND_UNRESOLVABLE},
    events=EVENTS,
    score_channel=SCORE_CHANNEL,
    filter_masks=(FILTER_MASK,),
    queueing_hint=_queueing_hint,
    kernel_codes={ERR_REASON_UNTOLERATED_TAINT: "TAINT"},
    per_node=_per_node,
)
