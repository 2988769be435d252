"""InterPodAffinity: required pod (anti-)affinity filters, preferred terms score.

Counted per topology domain as pods are placed, so in the burst kernel
(``core/interpod.py`` encodes the terms; reason codes 10-12). A pod whose own terms carry
an invalid selector is rejected by the PreFilter ("parsing pod: ...", unresolvable).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesalvo.core.args_reading import ArgsDecoder, build, open_args
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    PRE_FILTER,
    PRE_SCORE,
    SCORE,
    ActionType,
    ClusterEvent,
    Code,
    ErrorKind,
    EventResource,
    FieldError,
    HintFn,
    NodeTable,
    ParsedPodClass,
    PerNode,
    PluginSpec,
    PreFilter,
    PreFilterResult,
    PreScore,
    check,
)

__all__ = [
    "ERR_REASON_AFFINITY",
    "ERR_REASON_ANTI_AFFINITY",
    "ERR_REASON_EXISTING_ANTI_AFFINITY",
    "NAME",
    "PARSING_POD",
    "PRESCORE_PARSING_POD",
    "InterPodAffinityArgs",
]

NAME = names.INTER_POD_AFFINITY
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
# Invalid label selectors in the pod being scheduled (see core/label_selectors.py): each
# text is followed by apimachinery's error. The PreFilter rejects the pod
# (UnschedulableAndUnresolvable); the PreScore fails the attempt with an error.
PARSING_POD = "parsing pod: "
PRESCORE_PARSING_POD = 'running PreScore plugin "InterPodAffinity": failed to parse pod: '
_MAX_HARD_POD_AFFINITY_WEIGHT = 100


@dataclass(frozen=True)
class InterPodAffinityArgs:
    """InterPodAffinityArgs."""

    # The score an existing pod's *required* affinity term adds when the incoming pod
    # matches it (0 turns this off).
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        if 0 <= self.hard_pod_affinity_weight <= _MAX_HARD_POD_AFFINITY_WEIGHT:
            return []
        return [
            FieldError(
                "hardPodAffinityWeight",
                ErrorKind.INVALID,
                self.hard_pod_affinity_weight,
                "not in valid range [0, 100]",
            )
        ]


EVENTS = (
    ClusterEvent(
        EventResource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
    ),
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
)


def _queueing_hint() -> HintFn:
    """Its queueing hint, which reads the per-node logic that imports this module."""
    from kubesalvo.core.pernode.inter_pod_affinity_hint import queueing_hint

    return queueing_hint


def read_args(d: ArgsDecoder, raw: Any, path: str) -> InterPodAffinityArgs:
    """InterPodAffinityArgs from its pluginConfig document."""
    f = open_args(
        d, raw, path, NAME, ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods")
    )
    weight = f.integer("hardPodAffinityWeight", 1)
    assert weight is not None
    ignore = bool(f.flag("ignorePreferredTermsOfExistingPods", False))
    return build(d, path, lambda: InterPodAffinityArgs(weight, ignore), InterPodAffinityArgs())


def _parsing_pod(args: Any, nodes: NodeTable, cls: ParsedPodClass) -> PreFilterResult | None:
    """The PreFilter's parse of the pod's own terms: one that does not parse rejects the
    pod on every node (the encoder parsed them once per class)."""
    if cls.affinity_error is None:
        return None
    return PreFilterResult(message=PARSING_POD + cls.affinity_error)


OWN_TERMS = PreFilter(_parsing_pod, reads="affinity")


def _prescore_parsing_pod(
    args: InterPodAffinityArgs, nodes: NodeTable, cls: ParsedPodClass
) -> str | None:
    """The PreScore's parse of the pod's own terms (reached when the filter is disabled:
    its PreFilter rejects such a pod first): one that does not parse fails the attempt
    with an error, unless PreScore skips the plugin before reading them (existing pods'
    preferred terms ignored and the pod has no preferred term of its own)."""
    if cls.affinity_error is None:
        return None
    if args.ignore_preferred_terms_of_existing_pods:
        affinity = cls.spec.get("affinity") or {}
        if not any(
            (affinity.get(kind) or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
            for kind in ("podAffinity", "podAntiAffinity")
        ):
            return None
    return PRESCORE_PARSING_POD + cls.affinity_error


OWN_TERMS_AT_PRESCORE = PreScore(_prescore_parsing_pod, reads="affinity")


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.inter_pod_affinity import PER_NODE

    return PER_NODE


SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE}),
    args=InterPodAffinityArgs,
    reasons={
        ERR_REASON_EXISTING_ANTI_AFFINITY: Code.UNSCHEDULABLE,
        ERR_REASON_AFFINITY: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ERR_REASON_ANTI_AFFINITY: Code.UNSCHEDULABLE,
    },
    events=EVENTS,
    queueing_hint=_queueing_hint,
    args_reader=read_args,
    profile_field="inter_pod_affinity",
    kernel_codes={
        ERR_REASON_AFFINITY: "IPA_AFFINITY",
        ERR_REASON_ANTI_AFFINITY: "IPA_ANTI",
        ERR_REASON_EXISTING_ANTI_AFFINITY: "IPA_EXISTING",
    },
    per_node=_per_node,
    pre_filter=OWN_TERMS,
    pre_score=OWN_TERMS_AT_PRESCORE,
)
