"""NodeAffinity: ``spec.nodeSelector`` and required node affinity filter, preferred terms
score; the profile's ``addedAffinity`` applies to every pod of it.

The filter is this module's two masks (:data:`FILTER_MASKS`): the profile's added required
affinity, then the pod's nodeSelector and required terms. Its PreFilter
(:data:`NAMED_NODES`) reads the required terms' ``metadata.name`` fields: when every term
names nodes, only those may pass (the others fail with the narrowing reason, code 7),
and none at all rejects the pod (:data:`ERR_REASON_NODE_AFFINITY_CONFLICT`). The score is
this module's channel (:data:`SCORE_CHANNEL`): per node, the summed weights of the
preferred terms it matches (the pod's and the profile's added ones), which the kernel
normalises over the feasible nodes by their largest sum.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core.added_affinity import decode_node_affinity, node_affinity_to_api
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
    FilterMask,
    HintFn,
    NodeTable,
    Normalise,
    PerNode,
    PluginSpec,
    PodClass,
    PreFilter,
    PreFilterResult,
    ScoreChannel,
    check,
    prefilter_narrowing_reason,
)

__all__ = [
    "ERR_REASON_ENFORCED_NODE_AFFINITY",
    "ERR_REASON_NODE_AFFINITY",
    "ERR_REASON_NODE_AFFINITY_CONFLICT",
    "FILTER_MASKS",
    "NAME",
    "NAMED_NODES",
    "SCORE_CHANNEL",
    "NodeAffinityArgs",
    "named_nodes",
    "preferred_terms_of",
    "preferred_weights",
    "selector_failing",
]

NAME = names.NODE_AFFINITY
ERR_REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED_NODE_AFFINITY = "node(s) didn't match scheduler-enforced node affinity"
# The PreFilter's rejection when the pod's terms name nodes that cannot all be (its
# metadata.name terms conflict): UnschedulableAndUnresolvable, the PreFilter run ends.
ERR_REASON_NODE_AFFINITY_CONFLICT = "pod affinity terms conflict"


@dataclass(frozen=True)
class NodeAffinityArgs:
    """NodeAffinityArgs: a node affinity (API shape) added to every pod of the profile.

    The config loader reads ``addedAffinity`` field by field (``core/added_affinity.py``)
    and hands it here in the API shape the encoder reads.
    """

    added_affinity: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        """The terms that do not parse (a Gt/Lt value that is not an integer, ...)."""
        # Imported here: the node selector rules are written once, plainly, in core/pernode.
        from kubesalvo.core.pernode.selectors import (
            InvalidSelector,
            node_selector_terms,
            preferred_terms,
        )

        if not self.added_affinity:
            return []
        out: list[FieldError] = []
        base = "addedAffinity"
        required = self.added_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            for i, raw in enumerate(required.get("nodeSelectorTerms") or ()):
                parsed = node_selector_terms({"nodeSelectorTerms": [raw]})
                term = parsed[0] if parsed else None
                if term is not None and not term.valid:
                    out.append(
                        FieldError(
                            f"{base}.requiredDuringSchedulingIgnoredDuringExecution"
                            f".nodeSelectorTerms[{i}]",
                            ErrorKind.INVALID,
                            term.error,
                        )
                    )
        preferred = self.added_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
        try:
            preferred_terms(preferred or ())
        except InvalidSelector as err:
            out.append(
                FieldError(
                    f"{base}.preferredDuringSchedulingIgnoredDuringExecution",
                    ErrorKind.INVALID,
                    str(err),
                )
            )
        return out


_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def preferred_terms_of(args: NodeAffinityArgs | None, nodes: NodeTable, pod: PodClass) -> Any:
    """The pod's own preferred terms (the added ones are the profile's, the same for all)."""
    return ((pod.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(_PREFERRED)


def preferred_weights(
    args: NodeAffinityArgs | None, nodes: NodeTable, pod: PodClass
) -> npt.NDArray[np.int64]:
    """Per node, the summed weights of the preferred terms whose preference it matches:
    the pod's, then the profile's ``addedAffinity`` ones (the plugin's raw score)."""
    terms = list(preferred_terms_of(args, nodes, pod) or ())
    added = (args.added_affinity if args is not None else None) or {}
    terms += list(added.get(_PREFERRED) or ())
    out: npt.NDArray[np.int64] | None = None
    for term in terms:
        weight = int(term.get("weight") or 0)
        if weight:
            matched = weight * nodes.term_match(term.get("preference") or {}).astype(np.int64)
            out = matched if out is None else out + matched
    return out if out is not None else np.zeros(len(nodes.node_names()), dtype=np.int64)


_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _selector_match(nodes: NodeTable, selector: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
    # A NodeSelector's terms ORed (no terms: no node); term_match ANDs a term's parts.
    match = np.zeros(len(nodes.node_names()), dtype=bool)
    for term in selector.get("nodeSelectorTerms") or ():
        match |= nodes.term_match(term)
    return match


def added_failing(
    args: NodeAffinityArgs | None, nodes: NodeTable, pod: PodClass
) -> npt.NDArray[np.bool_] | None:
    """The nodes the profile's added required affinity refuses (None: it adds none)."""
    added = ((args.added_affinity if args is not None else None) or {}).get(_REQUIRED)
    return None if added is None else ~_selector_match(nodes, added)


def selector_failing(
    args: NodeAffinityArgs | None, nodes: NodeTable, pod: PodClass
) -> npt.NDArray[np.bool_]:
    """The nodes the pod's nodeSelector or required node affinity refuses."""
    match = np.ones(len(nodes.node_names()), dtype=bool)
    for label, value in (pod.spec.get("nodeSelector") or {}).items():
        match &= nodes.label_in(label, [value])
    required = ((pod.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(_REQUIRED)
    if required is not None:
        match &= _selector_match(nodes, required)
    return ~match


def _no_pod_part(args: NodeAffinityArgs | None, nodes: NodeTable, pod: PodClass) -> None:
    return None  # the profile's: the same for every pod


def _selector_of(args: NodeAffinityArgs | None, nodes: NodeTable, pod: PodClass) -> Any:
    required = ((pod.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(_REQUIRED)
    return (pod.spec.get("nodeSelector"), required)


def _term_names(term: Mapping[str, Any]) -> set[str] | None:
    """The nodes a term's ``metadata.name In`` fields leave (their intersection), or None
    when it has none."""
    found: set[str] | None = None
    for req in term.get("matchFields") or ():
        if req.get("key") == "metadata.name" and req.get("operator") == "In":
            values = set(req.get("values") or ())
            found = values if found is None else found & values
    return found


def named_nodes(
    args: NodeAffinityArgs | None, nodes: NodeTable, pod: PodClass
) -> PreFilterResult | None:
    """The PreFilter: when every required term names nodes by ``metadata.name``, the rows
    of the named nodes (the union over the terms), or the rejection when no node is named
    at all; None when some term names none (every node stays)."""
    required = ((pod.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(_REQUIRED)
    if required is None:
        return None
    terms = required.get("nodeSelectorTerms") or ()
    if not terms:
        return None
    wanted: set[str] = set()
    for term in terms:
        in_term = _term_names(term)
        if in_term is None:
            return None
        wanted |= in_term
    if not wanted:
        return PreFilterResult(message=ERR_REASON_NODE_AFFINITY_CONFLICT)
    return PreFilterResult(keep=nodes.name_in(wanted))


# The named rows depend on the required terms only: part of the static rows' signature.
NAMED_NODES = PreFilter(named_nodes, reads="affinity", narrows=True)

# Both depend on no more than the static rows' signature (nodeSelector, required terms).
FILTER_MASKS = (
    FilterMask(ERR_REASON_ENFORCED_NODE_AFFINITY, added_failing, _no_pod_part, True),
    FilterMask(ERR_REASON_NODE_AFFINITY, selector_failing, _selector_of, True),
)

# The more preferred weight a node matches, the more it scores (max-normalised).
SCORE_CHANNEL = ScoreChannel(Normalise.MAX, preferred_weights, preferred_terms_of, reads="affinity")
EVENTS = (ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),)


def _queueing_hint() -> HintFn:
    """Its queueing hint, which reads the per-node logic that imports this module."""
    from kubesalvo.core.pernode.node_affinity_hint import queueing_hint

    return queueing_hint


def read_args(d: ArgsDecoder, raw: Any, path: str) -> NodeAffinityArgs:
    """NodeAffinityArgs from its pluginConfig document (``core/added_affinity.py`` reads
    and checks the terms)."""
    f = open_args(d, raw, path, NAME, ("addedAffinity",))
    if not f.has("addedAffinity"):
        return NodeAffinityArgs()
    errors = len(d.errors)
    added = decode_node_affinity(d, f.raw("addedAffinity"), f.at("addedAffinity"))
    if len(d.errors) > errors:
        return NodeAffinityArgs()
    return build(d, path, lambda: NodeAffinityArgs(node_affinity_to_api(added)), NodeAffinityArgs())


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.node_affinity import PER_NODE

    return PER_NODE


SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE}),
    args=NodeAffinityArgs,
    reasons={
        ERR_REASON_NODE_AFFINITY: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ERR_REASON_ENFORCED_NODE_AFFINITY: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    },
    events=EVENTS,
    score_channel=SCORE_CHANNEL,
    filter_masks=FILTER_MASKS,
    pre_filter=NAMED_NODES,
    queueing_hint=_queueing_hint,
    args_reader=read_args,
    profile_field="node_affinity",
    kernel_codes={
        ERR_REASON_NODE_AFFINITY: "NODE_AFFINITY",
        ERR_REASON_ENFORCED_NODE_AFFINITY: "ENFORCED_AFFINITY",
        # the nodes its PreFilter left out (its metadata.name terms)
        prefilter_narrowing_reason([NAME]): "NARROWED",
    },
    per_node=_per_node,
)
