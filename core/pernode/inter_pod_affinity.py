"""InterPodAffinity: required and preferred pod affinity and anti-affinity.

A term selects pods by labels within namespaces: the listed ``namespaces``, plus the
namespaces whose labels match ``namespaceSelector`` (``{}`` means every namespace); a
term with neither means the pod's own namespace. The term holds in the topology domain
(the node label ``topologyKey``) of the nodes where the selected pods run.
``matchLabelKeys``/``mismatchLabelKeys`` are not read: the API server already merged
them into ``labelSelector`` when the pod was created.

Invalid selectors (in a term's labelSelector or namespaceSelector): if any term of the
incoming pod has one, in any of its four sections, PreFilter rejects the pod with
"parsing pod: ..." (unschedulable and unresolvable; with the filter disabled, the
score's PreScore fails the attempt with an error instead). A placed pod's section with
an invalid term is dropped whole; its other sections still count.

Filter, in this order:

1. affinity: every required affinity term needs a selected pod in the node's domain
   (a node without the key fails). Exception: when no pod anywhere matches all the
   terms and the pod matches them itself, it may go anywhere with the keys, so the
   first pod of a group that wants to be together can start it;
2. anti-affinity: no pod selected by a required anti-affinity term in the node's domain;
3. existing pods' anti-affinity: no running pod whose required anti-affinity term
   selects this pod may share, through the term's key, a domain with the node.

Score: over every pod already placed, +weight for each preferred affinity term of the
pod that selects it, -weight for each anti-affinity one, and, from the placed pod's
side, +hardPodAffinityWeight for its required affinity terms and +/-weight for its
preferred terms that select the incoming pod; each amount goes to the placed pod's
domain. A node scores the sum over its domains, min-max normalised to 0..100.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kubesalvo.core.label_selectors import pod_affinity_error
from kubesalvo.core.pernode.framework import Pod, PreFilterRejection, SchedulingError, Status
from kubesalvo.core.pernode.selectors import NOTHING, InvalidSelector, Selector, label_selector
from kubesalvo.core.pernode.snapshot import NodeInfo, Snapshot, labels_of, namespace_of
from kubesalvo.core.plugins import inter_pod_affinity, names
from kubesalvo.core.plugins.framework import PerNode
from kubesalvo.core.plugins.inter_pod_affinity import InterPodAffinityArgs


@dataclass(frozen=True)
class Term:
    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector
    weight: int = 0

    def matches(self, pod: Pod, namespace_labels: Mapping[str, str]) -> bool:
        """AffinityTerm.Matches: namespace listed or selected, then the label selector."""
        if namespace_of(pod) in self.namespaces or self.namespace_selector.matches(
            namespace_labels
        ):
            return self.selector.matches(labels_of(pod))
        return False

    def resolved(self, snapshot: Snapshot) -> Term:
        """The incoming pod's term with its namespace selector turned into names.

        kube-scheduler lists the namespaces the selector matches once per cycle; the
        match-everything selector is kept as it is.
        """
        if self.namespace_selector.empty:
            return self
        chosen = {
            ns
            for ns, labels in snapshot.namespaces.items()
            if self.namespace_selector.matches(labels)
        }
        return replace(self, namespaces=self.namespaces | chosen, namespace_selector=NOTHING)


def _term(pod: Pod, raw: Mapping[str, Any], weight: int = 0) -> Term:
    listed = raw.get("namespaces") or []
    ns_selector = raw.get("namespaceSelector")
    namespaces = (
        frozenset(listed) if listed or ns_selector is not None else frozenset({namespace_of(pod)})
    )
    return Term(
        namespaces=namespaces,
        selector=label_selector(raw.get("labelSelector")),
        topology_key=raw.get("topologyKey", ""),
        namespace_selector=label_selector(ns_selector),
        weight=weight,
    )


def pod_terms(pod: Pod, kind: str, required: bool) -> list[Term]:
    """A pod's terms of ``kind`` (podAffinity or podAntiAffinity); raises InvalidSelector."""
    section = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    if required:
        return [
            _term(pod, t)
            for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
        ]
    return [
        _term(pod, t.get("podAffinityTerm") or {}, int(t.get("weight") or 0))
        for t in section.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    ]


def existing_terms(pod: Pod, kind: str, required: bool) -> list[Term]:
    """A placed pod's terms; unparsable ones are dropped, as the scheduler's cache does."""
    try:
        return pod_terms(pod, kind, required)
    except InvalidSelector:
        return []


def incoming_terms(pod: Pod, snapshot: Snapshot, kind: str, required: bool) -> list[Term]:
    """The incoming pod's terms, namespace selectors resolved (parse errors checked first)."""
    return [t.resolved(snapshot) for t in pod_terms(pod, kind, required)]


def _matches_all(terms: list[Term], pod: Pod) -> bool:
    return bool(terms) and all(t.matches(pod, {}) for t in terms)


class InterPodAffinity:
    node_names: frozenset[str] | None = None

    def __init__(self, pod: Pod, snapshot: Snapshot) -> None:
        error = pod_affinity_error(pod.get("spec") or {})
        if error is not None:
            raise PreFilterRejection(
                names.INTER_POD_AFFINITY, inter_pod_affinity.PARSING_POD + error
            )
        self.pod = pod
        self.affinity = incoming_terms(pod, snapshot, "podAffinity", required=True)
        self.anti_affinity = incoming_terms(pod, snapshot, "podAntiAffinity", required=True)
        own_ns_labels = snapshot.namespace_labels(namespace_of(pod)) or {}
        self.existing_anti: Counter[tuple[str, str]] = Counter()
        self.affinity_counts: Counter[tuple[str, str]] = Counter()
        self.anti_counts: Counter[tuple[str, str]] = Counter()
        for node in snapshot.nodes:
            for other in node.pods:
                for term in existing_terms(other, "podAntiAffinity", required=True):
                    if term.matches(pod, own_ns_labels) and term.topology_key in node.labels:
                        self.existing_anti[(term.topology_key, node.labels[term.topology_key])] += 1
                if _matches_all(self.affinity, other):
                    for term in self.affinity:
                        if term.topology_key in node.labels:
                            self.affinity_counts[
                                (term.topology_key, node.labels[term.topology_key])
                            ] += 1
                for term in self.anti_affinity:
                    if term.matches(other, {}) and term.topology_key in node.labels:
                        self.anti_counts[(term.topology_key, node.labels[term.topology_key])] += 1

    def filter(self, node: NodeInfo) -> Status | None:
        if not self._satisfies_affinity(node):
            return Status.unresolvable(inter_pod_affinity.ERR_REASON_AFFINITY)
        for term in self.anti_affinity:
            value = node.labels.get(term.topology_key)
            if value is not None and self.anti_counts[(term.topology_key, value)] > 0:
                return Status.unschedulable(inter_pod_affinity.ERR_REASON_ANTI_AFFINITY)
        for pair in node.labels.items():
            if self.existing_anti[pair] > 0:
                return Status.unschedulable(inter_pod_affinity.ERR_REASON_EXISTING_ANTI_AFFINITY)
        return None

    def _satisfies_affinity(self, node: NodeInfo) -> bool:
        pods_exist = True
        for term in self.affinity:
            value = node.labels.get(term.topology_key)
            if value is None:
                return False
            if self.affinity_counts[(term.topology_key, value)] <= 0:
                pods_exist = False
        if pods_exist:
            return True
        # The first pod of a self-affine group: nothing matches yet, but it matches itself.
        return not self.affinity_counts and _matches_all(self.affinity, self.pod)


def score(
    pod: Pod, snapshot: Snapshot, feasible: list[NodeInfo], args: InterPodAffinityArgs
) -> dict[str, int] | None:
    spec = pod.get("spec") or {}
    sections = spec.get("affinity") or {}
    has_preferred = any(
        (sections.get(kind) or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
        for kind in ("podAffinity", "podAntiAffinity")
    )
    if args.ignore_preferred_terms_of_existing_pods and not has_preferred:
        return None
    error = pod_affinity_error(spec)
    if error is not None:  # reached only with the InterPodAffinity filter disabled
        raise SchedulingError(inter_pod_affinity.PRESCORE_PARSING_POD + error)
    preferred = incoming_terms(pod, snapshot, "podAffinity", required=False)
    preferred_anti = incoming_terms(pod, snapshot, "podAntiAffinity", required=False)
    own_ns_labels = snapshot.namespace_labels(namespace_of(pod)) or {}
    # topology key -> value -> score; a key appears once any term matched there.
    topology: dict[str, Counter[str]] = {}

    def add(
        term: Term, target: Pod, ns_labels: Mapping[str, str], node: NodeInfo, amount: int
    ) -> None:
        if term.matches(target, ns_labels) and term.topology_key in node.labels:
            topology.setdefault(term.topology_key, Counter())[node.labels[term.topology_key]] += (
                amount
            )

    for node in snapshot.nodes:
        if not node.labels:
            continue
        for other in node.pods:
            for term in preferred:
                add(term, other, {}, node, term.weight)
            for term in preferred_anti:
                add(term, other, {}, node, -term.weight)
            if args.hard_pod_affinity_weight > 0:
                for term in existing_terms(other, "podAffinity", required=True):
                    add(term, pod, own_ns_labels, node, args.hard_pod_affinity_weight)
            for term in existing_terms(other, "podAffinity", required=False):
                add(term, pod, own_ns_labels, node, term.weight)
            for term in existing_terms(other, "podAntiAffinity", required=False):
                add(term, pod, own_ns_labels, node, -term.weight)
    if not topology:
        return None
    raw = {
        node.name: sum(
            values[node.labels[key]] for key, values in topology.items() if key in node.labels
        )
        for node in feasible
    }
    if not raw:
        return {}
    lowest, highest = min(raw.values()), max(raw.values())
    spread = highest - lowest
    return {
        name: int(100.0 * (float(value - lowest) / float(spread))) if spread > 0 else 0
        for name, value in raw.items()
    }


# Its contribution to the per-node evaluator (``PodEvaluator``), loaded by its spec.
def _filter(evaluator: Any, pod: Pod) -> InterPodAffinity:
    return InterPodAffinity(pod, evaluator.snapshot)


def _score(evaluator: Any, pod: Pod, feasible: list[NodeInfo]) -> dict[str, int] | None:
    return score(pod, evaluator.snapshot, feasible, evaluator.profile.inter_pod_affinity)


PER_NODE = PerNode(filter=_filter, score=_score)
