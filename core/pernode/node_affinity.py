"""NodeAffinity: nodeSelector, required node affinity, preferred terms, addedAffinity.

Filter: the profile's ``addedAffinity`` required terms must match ("scheduler-enforced"
reason), then the pod's ``nodeSelector`` (every pair) and its required terms (any term,
all expressions of it). A required selector with no non-empty term matches no node.

PreFilter narrows the search when every required term pins ``metadata.name`` with In:
only the named nodes are evaluated, the rest are reported as not satisfying
NodeAffinity; when the named sets leave no node at all the pod is rejected with
"pod affinity terms conflict".

Score: the sum of the weights of the matching preferred terms (the profile's added
ones and the pod's), normalised so the best node scores 100.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesalvo.core.pernode.framework import (
    Pod,
    PodInvalid,
    PreFilterRejection,
    Status,
    default_normalize,
)
from kubesalvo.core.pernode.selectors import (
    InvalidSelector,
    NodeSelectorTerm,
    node_selector_terms,
    preferred_terms,
    selector_from_set,
)
from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.plugins import names, node_affinity
from kubesalvo.core.plugins.framework import PerNode


def _node_affinity(pod: Pod) -> Mapping[str, Any]:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


class RequiredNodeAffinity:
    """The pod's nodeSelector and required node affinity (GetRequiredNodeAffinity)."""

    def __init__(self, pod: Pod) -> None:
        node_selector = (pod.get("spec") or {}).get("nodeSelector")
        self.selector = selector_from_set(node_selector) if node_selector else None
        required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
        self.terms: tuple[NodeSelectorTerm, ...] | None = (
            node_selector_terms(required) if required is not None else None
        )

    def matches(self, node: NodeInfo) -> bool:
        if self.selector is not None and not self.selector.matches(node.labels):
            return False
        if self.terms is not None:
            return any(term.matches(node.node) for term in self.terms)
        return True


class NodeAffinity:
    def __init__(self, pod: Pod, added_affinity: Mapping[str, Any] | None) -> None:
        added_required = (added_affinity or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        self.added_terms = (
            node_selector_terms(added_required) if added_required is not None else None
        )
        self.required = RequiredNodeAffinity(pod)
        self.node_names = _pinned_node_names(pod)

    def filter(self, node: NodeInfo) -> Status | None:
        if self.added_terms is not None and not any(t.matches(node.node) for t in self.added_terms):
            return Status.unresolvable(node_affinity.ERR_REASON_ENFORCED_NODE_AFFINITY)
        if not self.required.matches(node):
            return Status.unresolvable(node_affinity.ERR_REASON_NODE_AFFINITY)
        return None


def _pinned_node_names(pod: Pod) -> frozenset[str] | None:
    """The node names required terms pin with ``metadata.name In``, or None (no pinning)."""
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = (required or {}).get("nodeSelectorTerms") or []
    if not terms:
        return None
    union: set[str] = set()
    for term in terms:
        pinned: set[str] | None = None
        for field in term.get("matchFields") or ():
            if field.get("key") == "metadata.name" and field.get("operator") == "In":
                values = set(field.get("values") or ())
                pinned = values if pinned is None else pinned & values
        if pinned is None:
            return None  # this term can match any node
        union |= pinned
    if not union:
        raise PreFilterRejection(
            names.NODE_AFFINITY, node_affinity.ERR_REASON_NODE_AFFINITY_CONFLICT
        )
    return frozenset(union)


def score(
    pod: Pod, feasible: list[NodeInfo], added_affinity: Mapping[str, Any] | None
) -> dict[str, int] | None:
    try:
        added = preferred_terms(
            (added_affinity or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        )
        raw = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution")
        own = preferred_terms(raw or ())
    except InvalidSelector as err:
        raise PodInvalid(f"preferred node affinity: {err}") from err
    if raw is None and not added:
        return None
    terms = added + own
    sums = {
        node.name: sum(weight for weight, term in terms if term.matches(node.node))
        for node in feasible
    }
    return default_normalize(sums)


# Its contribution to the per-node evaluator (``PodEvaluator``), loaded by its spec.
def _filter(evaluator: Any, pod: Pod) -> NodeAffinity:
    return NodeAffinity(pod, evaluator.profile.node_affinity.added_affinity)


def _score(evaluator: Any, pod: Pod, feasible: list[NodeInfo]) -> dict[str, int] | None:
    return score(pod, feasible, evaluator.profile.node_affinity.added_affinity)


PER_NODE = PerNode(filter=_filter, score=_score)
