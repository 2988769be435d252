"""PodTopologySpread and InterPodAffinity, encoded: kernel rows over per-node pod counters.

A class's topology spread constraints become rows of small arrays (topology key, hard or
soft, maxSkew, minDomains, whether the pod matches its own selector, the nodes that count
for it under the inclusion policies). The pods a constraint counts - same namespace,
matched by its selector - are a *counter*: one int32 per node, shared by every
constraint with the same (namespace, selector), started from the pods already on the
nodes and raised by the kernel each time it places a pod the selector matches.

Inter-pod affinity uses the same counters: an incoming pod's term counts the pods it
selects (its required affinity terms together: the pods matching all of them), and the
terms that placed pods carry (required anti-affinity, affinity, preferred terms) are
counters of the pods carrying them. Each class gets rows (kind, counter, topology key,
weight) for its own terms and for every carried term that selects it.

Counters start from the state's (namespace, labels) pod groups, from the pods that carry
affinity terms, and from the pods the burst placed in earlier chunks; an index from label
pairs to classes and groups keeps that from comparing every selector with every class.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core._place import ZONE_LIMIT
from kubesalvo.core.encode import ClassInfo, Encoder, tolerates
from kubesalvo.core.interpod import InterPodRows, InterPodTerms
from kubesalvo.core.label_selectors import (
    NOTHING_KEY,
    CounterKey,
    Part,
    Selector,
    candidates,
    indexed_candidates,
    is_spread_key,
    is_term_key,
    label_selector,
    parse_selector,
    parts_match,
    parts_of,
    selector_matches,
)
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.pod_topology_spread import PodTopologySpreadArgs, SpreadDefaulting
from kubesalvo.core.state import ClusterState

__all__ = [
    "HOSTNAME",
    "Selector",
    "SpreadEncoder",
    "SpreadTables",
    "label_selector",
    "selector_matches",
]

HOSTNAME = "kubernetes.io/hostname"


def _parts(key: CounterKey) -> tuple[Part, ...]:
    """The (namespaces, selector) parts a pod must match to count under ``key``."""
    if is_spread_key(key):
        return ((frozenset({key[1]}), key[2]),)
    return parts_of(key)


@dataclass(slots=True)
class Constraint:
    key: str
    hard: bool
    max_skew: int
    min_domains: int
    selector: Selector
    honor_affinity: bool
    honor_taints: bool


def class_constraints(
    info: ClassInfo, args: PodTopologySpreadArgs, workloads: Sequence[Mapping[str, Any]] = ()
) -> tuple[list[Constraint], bool]:
    """The class's constraints, and whether soft scoring ignores nodes missing a key.

    A pod without constraints of its own gets the profile's defaults, selecting what its
    Services and controller (ReplicationController, ReplicaSet, StatefulSet, from
    ``workloads``) select; none of those means no default constraint.
    """
    labels = info.label_map
    own = info.spec.get("topologySpreadConstraints") or ()
    # The encoder parsed each constraint's selector already (ClassInfo.spread_selectors).
    parsed = info.spread_selectors or [parse_selector(c.get("labelSelector")) for c in own]
    out = []
    for c, (selector, _) in zip(own, parsed, strict=True):
        label_keys = c.get("matchLabelKeys")
        if label_keys and selector is not None:
            keys = sorted(k for k in label_keys if k in labels)
            selector = tuple((k, "In", (labels[k],)) for k in keys) + selector
        out.append(
            Constraint(  # positional, in field order: this runs once per class of a burst
                c.get("topologyKey", ""),
                c.get("whenUnsatisfiable") == "DoNotSchedule",
                int(c.get("maxSkew", 1)),
                int(c.get("minDomains") or 1),
                selector,
                (c.get("nodeAffinityPolicy") or "Honor") == "Honor",
                (c.get("nodeTaintsPolicy") or "Ignore") == "Honor",
            )
        )
    if own:
        return out, True
    require_all = args.defaulting_type is not SpreadDefaulting.SYSTEM
    defaults = args.effective_constraints
    if not defaults:
        return [], require_all
    selector = default_selector(info, workloads)
    if selector is None or selector == ():
        return [], require_all
    return [
        Constraint(
            key=c.topology_key,
            hard=c.when_unsatisfiable == "DoNotSchedule",
            max_skew=c.max_skew,
            min_domains=1,
            selector=selector,
            honor_affinity=True,
            honor_taints=False,
        )
        for c in defaults
    ], require_all


def _set_selector(pairs: Mapping[str, str]) -> Selector:
    return tuple((k, "In", (v,)) for k, v in sorted(pairs.items()))


def default_selector(info: ClassInfo, workloads: Sequence[Mapping[str, Any]]) -> Selector:
    """helper.DefaultSelector: what the pod's Services and controller select."""
    labels = info.label_map
    merged: dict[str, str] = {}
    same_ns = [
        w
        for w in workloads
        if ((w.get("metadata") or {}).get("namespace") or "default") == info.namespace
    ]
    for service in (w for w in same_ns if w.get("kind") == "Service"):
        wanted = (service.get("spec") or {}).get("selector")
        if wanted is not None and selector_matches(_set_selector(wanted), labels):
            merged.update(wanted)
    selector = _set_selector(merged)
    owner = next((o for o in info.owners if o.get("controller")), None)
    if owner is None:
        return selector
    kinds = {("v1", "ReplicationController"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")}
    if (owner.get("apiVersion"), owner.get("kind")) not in kinds:
        return selector
    for workload in same_ns:
        if workload.get("kind") != owner.get("kind"):
            continue
        if (workload.get("metadata") or {}).get("name") != owner.get("name"):
            continue
        raw = (workload.get("spec") or {}).get("selector")
        if owner.get("kind") == "ReplicationController":
            merged.update(raw or {})
            return _set_selector(merged)
        theirs = label_selector(raw)
        return selector if theirs is None else (selector or ()) + theirs
    return selector


def _readers(
    count: int, k_off: Sequence[int], k_counter: Sequence[int], ipa: InterPodRows
) -> list[set[int]]:
    """Per counter, the chunk's classes (local indices) whose constraints or terms read it."""
    readers: list[set[int]] = [set() for _ in range(count)]
    for i in range(len(k_off) - 1):
        for j in range(k_off[i], k_off[i + 1]):
            readers[k_counter[j]].add(i)
    a_off = ipa.c_a_off.tolist()
    a_counter = ipa.a_counter.tolist()
    for i in range(len(a_off) - 1):
        for j in range(a_off[i], a_off[i + 1]):
            readers[a_counter[j]].add(i)
    return readers


@dataclass
class SpreadTables:
    """The spread arrays of one chunk (see core/_place.pxd for each field)."""

    c_k_off: npt.NDArray[np.int32]
    k_key: npt.NDArray[np.int32]
    k_hard: npt.NDArray[np.uint8]
    k_skew: npt.NDArray[np.int64]
    k_min_domains: npt.NDArray[np.int64]
    k_self: npt.NDArray[np.uint8]
    k_counter: npt.NDArray[np.int32]
    k_elig: npt.NDArray[np.int32]
    k_host: npt.NDArray[np.uint8]
    elig: npt.NDArray[np.uint8]
    counters: npt.NDArray[np.int32]
    c_inc_off: npt.NDArray[np.int32]
    c_inc: npt.NDArray[np.int32]
    ipa: InterPodRows
    c_mode: npt.NDArray[np.uint8]
    c_spread_all: npt.NDArray[np.uint8]


@dataclass(slots=True)
class ChunkLayout:
    """A chunk's spread and inter-pod rows before the counters get their starting counts
    (``SpreadEncoder.layout``), and what ``SpreadEncoder.counted`` needs to add them."""

    # the chunk's arrays, except that ipa.a_counter holds counter ids (not the slots of
    # counted counters) and k_counter, counters, c_inc_off and c_inc are still empty
    tables: SpreadTables
    counters: dict[CounterKey, int]  # counter key -> counter id
    k_counter: list[int]  # per constraint row, its counter id
    may_count: list[set[int] | None]  # per counter, the burst's classes it may count
    raises: list[list[int]]  # per class, the counters its placed pods raise
    readers: list[set[int]]  # per counter, the classes that read it


# state -> (its groups_version, its groups' label index): the same for every burst while
# no group comes or goes (a stream of ReplicaSet pods); read only.
_group_indexes: weakref.WeakKeyDictionary[ClusterState, tuple[int, dict[Any, set[int]]]] = (
    weakref.WeakKeyDictionary()
)


def _group_index(state: ClusterState) -> dict[tuple[str, str], set[int]]:
    """Label pair -> the ids of the state's pod groups carrying it."""
    version = state.groups_version
    kept = _group_indexes.get(state)
    if kept is not None and kept[0] == version:
        return kept[1]
    index: dict[tuple[str, str], set[int]] = {}
    for gid, group in enumerate(state.groups):
        for pair in group.labels.items():
            index.setdefault(pair, set()).add(gid)
    _group_indexes[state] = (version, index)
    return index


class SpreadEncoder:
    """Builds the spread and inter-pod tables of each chunk of one burst."""

    def __init__(self, encoder: Encoder, workloads: Sequence[Mapping[str, Any]] = ()) -> None:
        self.encoder = encoder
        self.workloads = list(workloads)
        self._require_all: dict[int, bool] = {}
        self.state = encoder.state
        self.keys: dict[str, int] = {}  # topology key -> index into domain_ids
        args = encoder.profile.inter_pod_affinity
        self.interpod = InterPodTerms(
            encoder,
            self.keys,
            args.hard_pod_affinity_weight,
            args.ignore_preferred_terms_of_existing_pods,
        )
        self._constraints: dict[int, list[Constraint]] = {}
        self._every_node: dict[str, bool] = {}  # label key -> every node has it
        # The state's pod groups that counters start from (freeze_groups: a copy)
        self._groups = self.state.groups
        # label pair -> ids, for finding what a selector may match
        self._group_index = _group_index(self.state)
        self._class_index: dict[tuple[str, str], set[int]] = {}
        self.max_constraints = 0  # the most constraints a class of the burst has
        self.placed_rows: dict[int, list[int]] = {}  # class -> rows placed in earlier chunks
        profile = encoder.profile
        self._spread_filter = names.POD_TOPOLOGY_SPREAD in profile.filters
        self._spread_scored = profile.score_weights.get(names.POD_TOPOLOGY_SPREAD, 0) > 0

    def freeze_groups(self) -> None:
        """Start counters from the state's pods as they are now, whatever the state records
        later (core/place.py assumes a burst's done classes while it encodes the rest)."""
        self._groups = self.state.frozen_groups()

    def constraints(self, cid: int) -> list[Constraint]:
        found = self._constraints.get(cid)
        if found is None:
            found, require_all = class_constraints(
                self.encoder.classes[cid], self.encoder.profile.spread, self.workloads
            )
            self._constraints[cid] = found
            self._require_all[cid] = require_all
            for c in found:
                self.keys.setdefault(c.key, len(self.keys))
        return found

    def prepare(self, class_ids: Sequence[int]) -> None:
        """Register every class of the burst: its topology keys (in the order
        ``constraints`` gives them), the terms it carries, ``max_constraints``. A class
        with constraints of its own gets them, and the label index its labels, with its
        chunk (``layout``): its classes need not be complete (Encoder.complete) before."""
        classes = self.encoder.classes
        keys = self.keys
        most = self.max_constraints
        for cid in class_ids:
            info = classes[cid]
            own = info.spec.get("topologySpreadConstraints")
            if own:  # class_constraints: one constraint per own one, these keys
                for c in own:
                    keys.setdefault(c.get("topologyKey", ""), len(keys))
                most = max(most, len(own))
            else:
                most = max(most, len(self.constraints(cid)))
            if info.affinity is not None:  # (register would return at once)
                self.interpod.register(cid)
        self.max_constraints = most

    def _index(self, class_ids: Sequence[int]) -> None:
        """Add the classes' labels to the label index _class_candidates reads. A chunk's
        counters only ask about its own classes and those placed before it, so the index
        grows chunk by chunk."""
        classes = self.encoder.classes
        index = self._class_index
        for cid in class_ids:
            for pair in classes[cid].labels:
                found = index.get(pair)
                if found is None:
                    index[pair] = {cid}
                else:
                    found.add(cid)

    def domain_ids(self) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """Per topology key: the domain id of each row (-1 = no such label), and counts."""
        rows = self.state.rows
        table = np.full((max(1, len(self.keys)), rows), -1, dtype=np.int32)
        sizes = np.ones(max(1, len(self.keys)), dtype=np.int32)
        for key, k in self.keys.items():
            column = self.state.label_columns.get(key)
            if column is not None:
                table[k] = column[:rows]
                sizes[k] = max(1, len(self.state.label_values[key]))
        return table, sizes

    def _class_matches(self, key: CounterKey, cid: int) -> bool:
        """Whether a placed pod of class ``cid`` raises counter ``key``."""
        if is_term_key(key):
            return key[1] in self.interpod.carried(cid)
        info = self.encoder.classes[cid]
        if is_spread_key(key):  # what _parts(key) says, without building it
            return key[1] == info.namespace and selector_matches(key[2], info.label_map)
        return parts_match(parts_of(key), info.namespace, info.label_map)

    def _candidates_for(self, key: CounterKey, index, everyone):
        if is_term_key(key):
            carriers = self.interpod.carriers.get(key[1], set())
            return carriers.intersection(everyone)
        if is_spread_key(key):
            return candidates(key[2], index, everyone)
        found = None
        for _, selector in parts_of(key):
            ids = candidates(selector, index, everyone)
            found = ids if found is None else found & ids
        return found if found is not None else set(everyone)

    def _class_candidates(self, key: CounterKey) -> set[int] | None:
        """The burst's classes whose pods ``key`` may count (None: any class)."""
        if is_term_key(key):
            return self.interpod.carriers.get(key[1], set())
        if is_spread_key(key):
            return indexed_candidates(key[2], self._class_index)
        found = None
        for _, selector in _parts(key):
            ids = indexed_candidates(selector, self._class_index)
            if ids is not None:
                found = ids if found is None else found & ids
        return found

    def _initial_counts(
        self, key: CounterKey, classes: set[int] | None
    ) -> npt.NDArray[np.int32] | None:
        """The pods ``key`` counts per row before the chunk, or None when it counts none;
        ``classes``: its _class_candidates."""
        rows = self.state.rows
        if is_term_key(key):
            if not self.interpod.term_rows[key[1]] and not self.placed_rows:
                return None
            counts = self.interpod.term_counts(key[1], rows)
            placed = self._placed_matching(key, classes)
        else:
            groups = self._groups_matching(key) if self._groups else []
            placed = self._placed_matching(key, classes) if self.placed_rows else []
            if not placed and not any(self._groups[g].per_row for g in groups):
                return None
            counts = self.state.group_counts(groups, self._groups)
        for cid in placed:
            np.add.at(counts, self.placed_rows[cid], 1)
        if not counts.any():
            return None
        return counts.astype(np.int32)

    def _groups_matching(self, key: CounterKey) -> list[int]:
        """The state's pod groups that ``key`` counts (a spread key skips terminating ones)."""
        groups = self._groups
        if not groups:
            return []
        parts = _parts(key)
        spread = key[0] == "spread"
        return [
            gid
            for gid in self._candidates_for(key, self._group_index, range(len(groups)))
            if parts_match(parts, groups[gid].namespace, groups[gid].labels)
            and not (spread and groups[gid].terminating)
        ]

    def _placed_matching(self, key: CounterKey, classes: set[int] | None) -> list[int]:
        """The classes placed in earlier chunks whose pods ``key`` counts."""
        placed_rows = self.placed_rows
        if not placed_rows:
            return []
        return [
            cid
            for cid in (placed_rows if classes is None else classes)
            if placed_rows.get(cid) and self._class_matches(key, cid)
        ]

    def tables(self, class_ids: Sequence[int], pods: Sequence[int] | None = None) -> SpreadTables:
        """The chunk's arrays; ``pods``: how many pods of each class the chunk has."""
        return self.counted(self.layout(class_ids), pods)

    def layout(self, class_ids: Sequence[int]) -> ChunkLayout:
        """The chunk's rows and counters, which do not depend on what earlier chunks
        placed: core/place.py builds the next chunk's while the kernel runs this one."""
        enc = self.encoder
        enc.complete(class_ids)
        self._index(class_ids)
        rows = self.state.rows
        counters: dict[CounterKey, int] = {}
        elig_rows: dict[tuple[bytes, bool, bool], int] = {}
        elig_arrays: list[np.ndarray] = []
        off = [0]
        cols: dict[str, list[Any]] = {
            k: [] for k in ("key", "hard", "skew", "mind", "self", "counter", "elig", "host")
        }
        # The columns as locals: this loop runs once per class of the burst.
        k_key, k_hard, k_skew, k_mind = cols["key"], cols["hard"], cols["skew"], cols["mind"]
        k_self, k_counter, k_elig, k_host = (
            cols["self"],
            cols["counter"],
            cols["elig"],
            cols["host"],
        )
        for cid in class_ids:
            constraints = self._constraints.get(cid)
            if constraints is None:
                constraints = self.constraints(cid)
            if not constraints:
                off.append(len(k_key))
                continue
            info = enc.classes[cid]
            for c in constraints:
                selector = c.selector
                ckey: CounterKey = (
                    NOTHING_KEY
                    if selector is None or selector == ()  # counts_nothing
                    else ("spread", info.namespace, selector)
                )
                q = counters.get(ckey)
                if q is None:
                    q = counters[ckey] = len(counters)
                ekey = (info.static_key, c.honor_affinity, c.honor_taints)
                e = elig_rows.get(ekey)
                if e is None:
                    e = elig_rows[ekey] = len(elig_arrays)
                    elig_arrays.append(self._eligible(info, c.honor_affinity, c.honor_taints))
                k_key.append(self.keys[c.key])
                k_hard.append(c.hard)
                k_skew.append(c.max_skew)
                k_mind.append(c.min_domains)
                k_self.append(selector_matches(selector, info.label_map))
                k_counter.append(q)
                k_elig.append(e)
                k_host.append(c.key == HOSTNAME)
            off.append(len(k_key))
        ipa = self.interpod.rows(class_ids, counters, self.keys)
        a_off = ipa.c_a_off.tolist()
        modes = [self._mode(cid, a_off[i + 1] > a_off[i]) for i, cid in enumerate(class_ids)]
        # Which counters a placed pod of each class raises.
        local = {cid: i for i, cid in enumerate(class_ids)}
        raises: list[list[int]] = [[] for _ in class_ids]
        # per counter, the burst's classes it may count (looked up once, read twice)
        may_count: list[set[int] | None] = [None] * len(counters)
        classes = enc.classes
        for ckey, q in counters.items():
            if ckey == NOTHING_KEY:
                continue
            found = may_count[q] = self._class_candidates(ckey)
            if is_spread_key(ckey):  # most counters: _class_matches inlined
                namespace, selector = ckey[1], ckey[2]
                for cid in class_ids if found is None else found:
                    i = local.get(cid)
                    if i is not None:
                        info = classes[cid]
                        if info.namespace == namespace and selector_matches(
                            selector,
                            info.label_map,
                        ):
                            raises[i].append(q)
                continue
            for cid in class_ids if found is None else found:
                i = local.get(cid)
                if i is not None and self._class_matches(ckey, cid):
                    raises[i].append(q)
        readers = _readers(len(counters), off, k_counter, ipa)

        def arr(name: str, dtype: Any) -> np.ndarray:
            return np.array(cols[name] or [0], dtype=dtype)

        none = np.zeros(1, dtype=np.int32)
        tables = SpreadTables(
            c_k_off=np.array(off, dtype=np.int32),
            k_key=arr("key", np.int32),
            k_hard=arr("hard", np.uint8),
            k_skew=arr("skew", np.int64),
            k_min_domains=arr("mind", np.int64),
            k_self=arr("self", np.uint8),
            k_counter=none,
            k_elig=arr("elig", np.int32),
            k_host=arr("host", np.uint8),
            elig=np.ascontiguousarray(np.vstack(elig_arrays))
            if elig_arrays
            else np.zeros((1, rows), dtype=np.uint8),
            counters=np.zeros((1, rows), dtype=np.int32),
            c_inc_off=none,
            c_inc=none,
            ipa=ipa,
            c_mode=np.array(modes or [0], dtype=np.uint8),
            c_spread_all=np.array(
                [self._require_all[cid] for cid in class_ids] or [True], dtype=np.uint8
            ),
        )
        return ChunkLayout(tables, counters, k_counter, may_count, raises, readers)

    def counted(self, layout: ChunkLayout, pods: Sequence[int] | None = None) -> SpreadTables:
        """The chunk's arrays from its ``layout``, with the counters' starting counts
        (the pods on the nodes and those earlier chunks placed, see ``record``).
        ``pods``: how many pods of each class the chunk has."""
        rows = self.state.rows
        counters, raises, ipa = layout.counters, layout.raises, layout.tables.ipa
        live, initial = self._live_counters(
            counters, layout.may_count, raises, layout.readers, pods
        )
        # Counters the chunk can never see above zero share row 0, which nothing raises.
        slot = np.zeros(max(1, len(counters)), dtype=np.int32)
        slot[live] = np.arange(1, len(live) + 1, dtype=np.int32)
        counter_table = np.zeros((1 + len(live), rows), dtype=np.int32)
        for q in live:
            start = initial[q]
            if start is not None:
                counter_table[slot[q]] = start
        slots = slot.tolist()
        # per class, the live counters it raises, flattened
        flat: list[int] = []
        inc_off_list = [0]
        for raised in raises:
            for q in raised:
                if slots[q]:
                    flat.append(slots[q])
            inc_off_list.append(len(flat))
        a_counter = slot[ipa.a_counter] if len(counters) else ipa.a_counter
        return dataclasses.replace(
            layout.tables,
            k_counter=np.array([slots[q] for q in layout.k_counter] or [0], dtype=np.int32),
            counters=counter_table,
            c_inc_off=np.array(inc_off_list, dtype=np.int32),
            c_inc=np.array(flat or [0], dtype=np.int32),
            ipa=dataclasses.replace(ipa, a_counter=a_counter),
        )

    def _live_counters(
        self,
        counters: Mapping[CounterKey, int],
        may_count: Sequence[set[int] | None],
        raises: Sequence[Sequence[int]],
        readers: Sequence[set[int]],
        pods: Sequence[int] | None,
    ) -> tuple[list[int], list[npt.NDArray[np.int32] | None]]:
        """The counters a class of the chunk may see above zero, and every initial count.

        A counter that counts no pod yet stays at zero for the whole chunk when nothing
        raises it, when nothing reads it, or when one class with one pod in the chunk is
        the only one to read and raise it (it reads before its own placement). Distinct
        pods, each with a selector of its own, make thousands of such counters."""
        raised_by: list[set[int]] = [set() for _ in counters]
        for i, qs in enumerate(raises):
            for q in qs:
                raised_by[q].add(i)
        live: list[int] = []
        initial: list[npt.NDArray[np.int32] | None] = [None] * len(counters)
        no_groups = not self._groups
        placed = self.placed_rows.keys()
        for ckey, q in counters.items():
            found = may_count[q]
            if no_groups and found is not None and ckey[0] == "spread" and placed.isdisjoint(found):
                pass  # the usual spread counter: no pod it may count is placed yet
            else:
                initial[q] = self._initial_counts(ckey, found)
            if initial[q] is None:
                read, raised = readers[q], raised_by[q]
                if not raised or not read:
                    continue
                # both non-empty: one user in all when they are the same single class
                one_user = len(read) == 1 and read == raised
                if one_user and pods is not None and pods[next(iter(read))] == 1:
                    continue
            live.append(q)
        return live, initial

    def _mode(self, cid: int, has_interpod: bool) -> int:
        """How the kernel picks a node for the class: 0 max-tree, 1 per zone, 2 passes,
        3 per (zone, count of matching pods) for a soft hostname and a soft zone constraint
        over the same pods (the System defaults), every node having both keys."""
        if has_interpod:
            return 2
        constraints = self.constraints(cid)
        if not constraints:
            return 0
        hard = soft = 0
        for c in constraints:
            if c.hard:
                hard += 1
            else:
                soft += 1
        if hard and self._spread_filter:
            return 2
        if not (soft and self._spread_scored):
            return 0
        only = constraints[0]
        if len(constraints) == 1 and only.key != HOSTNAME and self._require_all[cid]:
            domains = len(self.state.label_values.get(only.key, ()))
            if domains <= ZONE_LIMIT:
                return 1
        if len(constraints) == 2 and not hard:
            first, second = constraints
            zone = second if first.key == HOSTNAME else first
            if (
                HOSTNAME in (first.key, second.key)
                and zone.key != HOSTNAME
                and first.selector == second.selector
                and len(self.state.label_values.get(zone.key, ())) <= ZONE_LIMIT
                and self._on_every_node(HOSTNAME)
                and self._on_every_node(zone.key)
            ):
                return 3
        return 2

    def _on_every_node(self, key: str) -> bool:
        """Whether every node has label ``key`` (then no node misses a constraint's key)."""
        found = self._every_node.get(key)
        if found is None:
            rows = self.state.rows
            column = self.state.label_columns.get(key)
            present = self.state.present[:rows].astype(bool)
            found = column is not None and bool((column[:rows][present] >= 0).all())
            self._every_node[key] = found
        return found

    def _eligible(self, info: ClassInfo, honor_affinity: bool, honor_taints: bool) -> np.ndarray:
        """Rows that count for a constraint under its node inclusion policies."""
        enc, state = self.encoder, self.state
        rows = state.rows
        keep = state.present[:rows].astype(bool)
        if honor_affinity:
            keep &= enc.required_affinity(info)
        if honor_taints:
            tolerations = info.spec.get("tolerations") or ()
            bad = [
                tid
                for tid, taint in enumerate(state.taint_list)
                if taint[2] in ("NoSchedule", "NoExecute")
                and not any(tolerates(t, taint) for t in tolerations)
            ]
            if bad:
                keep &= ~state.taints[:rows, bad].any(axis=1)
        return keep.astype(np.uint8)

    def record(
        self,
        class_ids: Sequence[int] | npt.NDArray[np.int32],
        local: npt.NDArray[np.intp],
        rows: np.ndarray,
    ) -> None:
        """Remember the chunk's placements, which later chunks' counters include."""
        placed = np.flatnonzero(np.asarray(rows) >= 0)
        ids = np.asarray(class_ids)[np.asarray(local)[placed]].tolist()
        placed_rows = self.placed_rows
        for cid, row in zip(ids, np.asarray(rows)[placed].tolist(), strict=True):
            found = placed_rows.get(cid)
            if found is None:
                placed_rows[cid] = [row]
            else:
                found.append(row)
