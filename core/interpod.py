"""InterPodAffinity, encoded: each class's affinity rows over per-node pod counters.

Rows of a class (kind, counter, topology key, weight), evaluated by the kernel over the
domains of the key (the rules are kube-scheduler's, see core/pernode/inter_pod_affinity):

* AFFINITY: one per required affinity term; the counter counts pods matching *all* of
  the class's required affinity terms (upstream counts only those);
* ANTI_AFFINITY: one per required anti-affinity term, counting the pods it selects;
* EXISTING_ANTI: one per required anti-affinity term carried by placed pods that selects
  the class, counting the pods carrying it;
* SCORE: the class's preferred terms (+/- weight, counting selected pods), and terms that
  placed pods carry and that select the class (required affinity: hardPodAffinityWeight;
  preferred: +/- weight, counting the pods carrying them).

An incoming term's namespaceSelector is resolved to names once; ``{}`` means every
namespace. A carried term keeps its selector and is matched against the namespace labels.

Invalid selectors: a placed pod's section with one carries no term (``carried_terms``);
a class with one is rejected by the encoder before any node is tried
(``ClassInfo.prefilter_message``) and gets no rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core.encode import ClassInfo, Encoder
from kubesalvo.core.label_selectors import (
    CounterKey,
    Part,
    Selector,
    candidates,
    label_selector,
    parts_match,
    selector_matches,
)

__all__ = ["AFFINITY", "ANTI_AFFINITY", "EXISTING_ANTI", "SCORE", "InterPodRows", "InterPodTerms"]

AFFINITY, ANTI_AFFINITY, EXISTING_ANTI, SCORE = 0, 1, 2, 3


@dataclass(frozen=True)
class CarriedTerm:
    """A term a placed pod carries: kind "anti", "affinity", "preferred" or "preferred-anti"."""

    kind: str
    namespaces: frozenset[str]
    namespace_selector: Selector
    selector: Selector
    topology_key: str
    weight: int

    def selects(
        self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str]
    ) -> bool:
        if namespace in self.namespaces or selector_matches(self.namespace_selector, ns_labels):
            return selector_matches(self.selector, labels)
        return False


def _raw_terms(
    affinity: Mapping[str, Any] | None, kind: str, required: bool
) -> list[tuple[Mapping[str, Any], int]]:
    section = (affinity or {}).get(kind) or {}
    if required:
        return [(t, 0) for t in section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()]
    return [
        (t.get("podAffinityTerm") or {}, int(t.get("weight") or 0))
        for t in section.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    ]


def _namespaces(raw: Mapping[str, Any], own: str) -> tuple[frozenset[str], Selector]:
    listed = raw.get("namespaces") or []
    ns_selector = raw.get("namespaceSelector")
    if listed or ns_selector is not None:
        return frozenset(listed), label_selector(ns_selector)
    return frozenset({own}), None


def carried_terms(namespace: str, affinity: Mapping[str, Any] | None) -> list[CarriedTerm]:
    """The terms a pod with ``affinity`` carries once placed.

    A section (say, the required anti-affinity terms) with a term whose labelSelector or
    namespaceSelector is invalid carries nothing: kube-scheduler's cache keeps the pod
    with that section's parse error ignored and its terms left out, the other sections
    still count.
    """
    out: list[CarriedTerm] = []
    if not affinity:
        return out
    for kind, section, required in (
        ("anti", "podAntiAffinity", True),
        ("affinity", "podAffinity", True),
        ("preferred", "podAffinity", False),
        ("preferred-anti", "podAntiAffinity", False),
    ):
        terms = []
        for raw, weight in _raw_terms(affinity, section, required):
            raw_selector = raw.get("labelSelector")
            selector = label_selector(raw_selector)
            namespaces, ns_selector = _namespaces(raw, namespace)
            # label_selector gives None (matches nothing) for an invalid selector too:
            # None from a selector that is there means it failed to parse.
            if (selector is None and raw_selector is not None) or (
                ns_selector is None and raw.get("namespaceSelector") is not None
            ):
                break
            terms.append(
                CarriedTerm(
                    kind, namespaces, ns_selector, selector, raw.get("topologyKey", ""), weight
                )
            )
        else:
            out.extend(terms)
    return out


@dataclass
class InterPodRows:
    """The inter-pod rows of one chunk (see core/_place.pxd for each field)."""

    c_a_off: npt.NDArray[np.int32]
    a_kind: npt.NDArray[np.uint8]
    a_key: npt.NDArray[np.int32]
    a_counter: npt.NDArray[np.int32]
    a_weight: npt.NDArray[np.int64]
    c_a_self: npt.NDArray[np.uint8]


class InterPodTerms:
    """The terms of a burst's classes and of the pods already placed, interned."""

    def __init__(
        self,
        encoder: Encoder,
        keys: dict[str, int],
        hard_weight: int,
        ignore_existing_preferred: bool,
    ) -> None:
        self.encoder = encoder
        self.state = encoder.state
        self.keys = keys
        self.hard_weight = hard_weight
        self.ignore_existing_preferred = ignore_existing_preferred
        self.term_ids: dict[CarriedTerm, int] = {}
        self.terms: list[CarriedTerm] = []
        self.term_rows: list[dict[int, int]] = []
        self._carried: dict[int, set[int]] = {}
        self.carriers: dict[int, set[int]] = {}  # term -> classes of the burst carrying it
        # The state counts the pods carrying terms per row: without any (a stream of
        # ReplicaSet pods), the scan of every pod's record, a millisecond per burst at
        # 20,000 pods, finds nothing.
        if not self.state.affinity_pods:
            return
        for record in self.state.pods.values():
            if record.affinity is not None:
                for term in carried_terms(record.namespace, record.affinity):
                    per_row = self.term_rows[self._intern(term)]
                    per_row[record.row] = per_row.get(record.row, 0) + 1

    def _intern(self, term: CarriedTerm) -> int:
        tid = self.term_ids.get(term)
        if tid is None:
            tid = len(self.terms)
            self.term_ids[term] = tid
            self.terms.append(term)
            self.term_rows.append({})
            self.keys.setdefault(term.topology_key, len(self.keys))
        return tid

    def register(self, cid: int) -> None:
        info = self.encoder.classes[cid]
        if info.affinity is None:
            return  # carries no term (``carried`` answers the empty set)
        tids = {self._intern(t) for t in carried_terms(info.namespace, info.affinity)}
        self._carried[cid] = tids
        for tid in tids:
            self.carriers.setdefault(tid, set()).add(cid)

    def carried(self, cid: int) -> set[int]:
        return self._carried.get(cid, set())

    def term_counts(self, tid: int, rows: int) -> npt.NDArray[np.int64]:
        counts = np.zeros(rows, dtype=np.int64)
        for row, count in self.term_rows[tid].items():
            counts[row] += count
        return counts

    def _incoming(
        self, info: ClassInfo, section: str, required: bool
    ) -> list[tuple[Part, str, int]]:
        """The class's own terms, resolved: ((namespaces, selector), topology key, weight)."""
        out: list[tuple[Part, str, int]] = []
        if not info.affinity:
            return out
        for raw, weight in _raw_terms(info.affinity, section, required):
            namespaces, ns_selector = _namespaces(raw, info.namespace)
            resolved: frozenset[str] | None = namespaces
            if ns_selector == ():
                resolved = None  # {} selects every namespace
            elif ns_selector is not None:
                resolved = namespaces | {
                    ns
                    for ns, labels in self.state.namespace_labels.items()
                    if selector_matches(ns_selector, labels)
                }
            out.append(
                (
                    (resolved, label_selector(raw.get("labelSelector"))),
                    raw.get("topologyKey", ""),
                    weight,
                )
            )
        return out

    def rows(
        self, class_ids: Sequence[int], counters: dict[CounterKey, int], keys: Mapping[str, int]
    ) -> InterPodRows:
        """The chunk's rows; counters they need are added to ``counters``."""

        def counter(key: CounterKey) -> int:
            if key not in counters:
                counters[key] = len(counters)
            return counters[key]

        classes = self.encoder.classes
        # carried terms selecting each class of the chunk
        selected_by: dict[int, list[int]] = {}
        if self.terms:
            index: dict[tuple[str, str], set[int]] = {}
            for cid in class_ids:
                for pair in classes[cid].labels:
                    index.setdefault(pair, set()).add(cid)
            for tid, term in enumerate(self.terms):
                for cid in candidates(term.selector, index, class_ids):
                    info = classes[cid]
                    ns_labels = self.state.namespace_labels.get(info.namespace, {})
                    if term.selects(info.namespace, info.label_map, ns_labels):
                        selected_by.setdefault(cid, []).append(tid)
        off, kinds, key_ids, counter_ids, weights, selfs = [0], [], [], [], [], []

        def add(kind: int, key: CounterKey, topology_key: str, weight: int = 0) -> None:
            kinds.append(kind)
            key_ids.append(keys[topology_key])
            counter_ids.append(counter(key))
            weights.append(weight)

        for cid in class_ids:
            info = classes[cid]
            selected = selected_by.get(cid, ())
            if (
                info.prefilter_message
                or info.error
                or (info.affinity is None and not selected)
                or info.affinity_error is not None
            ):
                # Rejected before any node is tried (its terms may not even parse), neither
                # carrying a term nor selected by one (no rows), or terms that do not parse
                # with InterPodAffinity's filter off: its PreScore fails the attempt when two
                # nodes or more are feasible, and one is taken unscored.
                selfs.append(False)
                off.append(len(kinds))
                continue
            labels = info.label_map
            affinity = self._incoming(info, "podAffinity", True)
            if affinity:
                together = tuple(part for part, _, _ in affinity)
                for _, topology_key, _ in affinity:
                    add(AFFINITY, together, topology_key)
            selfs.append(
                bool(affinity)
                and parts_match(tuple(p for p, _, _ in affinity), info.namespace, labels)
            )
            for part, topology_key, _ in self._incoming(info, "podAntiAffinity", True):
                add(ANTI_AFFINITY, (part,), topology_key)
            for tid in selected:
                if self.terms[tid].kind == "anti":
                    add(EXISTING_ANTI, ("term", tid), self.terms[tid].topology_key)
            preferred = self._incoming(info, "podAffinity", False)
            preferred_anti = self._incoming(info, "podAntiAffinity", False)
            if not self.ignore_existing_preferred or preferred or preferred_anti:
                for part, topology_key, weight in preferred:
                    add(SCORE, (part,), topology_key, weight)
                for part, topology_key, weight in preferred_anti:
                    add(SCORE, (part,), topology_key, -weight)
                for tid in selected:
                    term = self.terms[tid]
                    if term.kind == "affinity" and self.hard_weight > 0:
                        add(SCORE, ("term", tid), term.topology_key, self.hard_weight)
                    elif term.kind == "preferred":
                        add(SCORE, ("term", tid), term.topology_key, term.weight)
                    elif term.kind == "preferred-anti":
                        add(SCORE, ("term", tid), term.topology_key, -term.weight)
            off.append(len(kinds))
        return InterPodRows(
            c_a_off=np.array(off, dtype=np.int32),
            a_kind=np.array(kinds or [0], dtype=np.uint8),
            a_key=np.array(key_ids or [0], dtype=np.int32),
            a_counter=np.array(counter_ids or [0], dtype=np.int32),
            a_weight=np.array(weights or [0], dtype=np.int64),
            c_a_self=np.array(selfs or [False], dtype=np.uint8),
        )
