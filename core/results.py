"""A burst's outcome: ``PlacementResult``, built chunk by chunk from the kernel's outputs.

core/place.py gives each chunk's positions to ``Results.add`` once the kernel has run
the chunk (on its worker thread, while the kernel runs a later chunk); ``Results.result``
then adds what needs the whole burst (a rolled-back gang's messages and rejectors).
Messages are kube-scheduler's texts, built here from the reason codes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core.operands import Outputs
from kubesalvo.core.plugins import coscheduling, framework
from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.reasons import ReasonTable
from kubesalvo.core.state import ClusterState

__all__ = ["PlacementResult", "Results", "merged"]


@dataclass
class PlacementResult:
    """Where each pod of a burst went (in the order the pods were given)."""

    nodes: list[str | None]  # node name, None when not placed
    rows: npt.NDArray[np.int32]  # ClusterState row, -1 when not placed
    scores: npt.NDArray[np.int64]  # total weighted score of the chosen node
    # per placed pod, the nodes that shared that best total, the chosen one among them
    # drawn at random as kube-scheduler does (1: no tie; 0 when not placed)
    ties: list[int]
    reason_counts: list[dict[str, int]]  # per unplaced pod: nodes per reason ({} if placed)
    # per unplaced pod, the plugins that rejected it (from the reason codes; empty when
    # placed, failed with an error or rolled back with its gang): the queue parks it with
    # them and retries it on the cluster events they registered
    rejectors: list[frozenset[str]]
    # per unplaced pod, the plugin whose PreFilter rejected it on every node as
    # UnschedulableAndUnresolvable, which ends the PreFilter run ("" for none)
    prefilter_rejector: list[str]
    messages: list[str]  # "Successfully assigned ..." or the FailedScheduling text
    # per pod, the error that failed its attempt ("" for none): no node, no reasons, and
    # the error as its message; kube-scheduler reports it and backs the pod off
    errors: list[str]
    rolled_back: npt.NDArray[np.bool_]  # fitted, but its gang missed its minimum
    tentative: list[str | None]  # for a rolled-back pod, the node it had fitted
    num_nodes: int
    classes: int
    kernel_seconds: float  # the kernel's runs
    # the Python work (encoding, results, assuming); with several chunks part of it runs
    # on a worker thread while the kernel runs, so the two may add up to more than the
    # wall time
    encode_seconds: float
    # per pod, what VolumeBinding's Reserve chose for its unbound delayed claims: (claim
    # "ns/name", volume name, or "" to provision it on the node); empty when no pod of
    # the burst has such claims
    volume_bindings: list[list[tuple[str, str]]] = field(default_factory=list)
    # BurstPacking (core/burst_packing.py): pod index -> the node the kernel alone chose
    # (None: it left the pod out), for the pods it moved; empty without the plugin
    packing_moved: dict[int, str | None] = field(default_factory=dict)
    # a plan's (commit False) encoder and each pod's class in it, in the burst's order:
    # BurstPacking reads the filters' per-class verdict from them without classing again
    classified: Any = field(default=None, repr=False, compare=False)
    placed: int = field(init=False)

    def __post_init__(self) -> None:
        self.placed = int((self.rows >= 0).sum())


class Results:
    """The lists of a PlacementResult, filled chunk by chunk (positions in queue order)."""

    def __init__(
        self,
        table: ReasonTable,
        state: ClusterState,
        ordered: list[Mapping[str, Any]],
        order: list[int],
        gang_keys: list[gang.GroupKey | None],
        minimums: dict[gang.GroupKey, int],
        refused: Mapping[gang.GroupKey, str],
        class_of: npt.NDArray[np.int32],
        classes: list[Any],
        out: Outputs,
    ) -> None:
        n = len(ordered)
        self.table, self.state, self.ordered, self.order = table, state, ordered, order
        self.gang_keys, self.minimums, self.refused = gang_keys, minimums, refused
        self.class_of, self.classes, self.out = class_of, classes, out
        self.num_nodes = state.node_count
        self.node_names: list[str | None] = [None] * n
        self.counts: list[dict[str, int]] = [{}] * n
        self.rejectors: list[frozenset[str]] = [frozenset()] * n
        self.prefilter_rejector = [""] * n
        self.messages = [""] * n
        self.errors = [""] * n
        self.rolled = np.zeros(n, dtype=bool)
        self.tentative: list[str | None] = [None] * n
        self.row_list, self.score_list = [-1] * n, [0] * n
        self.tie_list = [0] * n
        # per gang, its pods the kernel rolled back; the messages of those that end there
        # (not refused) count the whole gang, in ``result``
        self.rolled_per_gang: dict[gang.GroupKey, int] = {}
        self.rolled_positions: list[int] = []

    def add(self, start: int, end: int) -> None:
        """The outcome of the pods at positions [start, end), which the kernel has run."""
        num_nodes, order, gang_keys, refused = (
            self.num_nodes,
            self.order,
            self.gang_keys,
            self.refused,
        )
        node_names, messages, names = self.node_names, self.messages, self.state.names
        row_list, score_list, tie_list = self.row_list, self.score_list, self.tie_list
        out = self.out
        # Python lists: this loop runs once per pod, and indexing numpy arrays is slower.
        node_of, score_of = out.node[start:end].tolist(), out.score[start:end].tolist()
        ties_of = out.ties[start:end].tolist()
        rolled_of = out.rolled[start:end].tolist()
        for rolled_pos in np.flatnonzero(out.rolled[start:end] >= 0).tolist():
            gang_key = gang_keys[start + rolled_pos]
            assert gang_key is not None  # only gang members are rolled back
            self.rolled_per_gang[gang_key] = self.rolled_per_gang.get(gang_key, 0) + 1
        success = framework.success_message
        for pos in range(start, end):
            i = order[pos]
            row = node_of[pos - start]
            group = gang_keys[pos]
            refusal = refused.get(group) if refused and group is not None else None
            if refusal is None and row >= 0:
                row_list[i] = row
                score_list[i] = score_of[pos - start]
                tie_list[i] = ties_of[pos - start]
                node = names[row]
                assert node is not None  # the kernel picks rows that hold a node
                node_names[i] = node
                meta = self.ordered[pos].get("metadata") or {}
                messages[i] = success(
                    meta.get("namespace") or "default", meta.get("name", ""), node
                )
            elif refusal is not None:  # Coscheduling's PreFilter: the kernel's try is undone
                self.counts[i] = {refusal: num_nodes}
                messages[i] = framework.fit_error_message(num_nodes, {}, prefilter_message=refusal)
                self.rejectors[i] = frozenset((coscheduling.NAME,))
                self.prefilter_rejector[i] = coscheduling.NAME
            elif rolled_of[pos - start] >= 0:
                self.rolled_positions.append(pos)
            else:
                self._failed(pos, i)

    def _failed(self, pos: int, i: int) -> None:
        num_nodes = self.num_nodes
        info = self.classes[self.class_of[pos]]
        error = info.error or (info.score_error if self.out.error[pos] else "")
        if num_nodes == 0:  # kube-scheduler fails the attempt before any plugin runs
            error = framework.ERR_NO_NODES_AVAILABLE
        if error:
            self.errors[i] = self.messages[i] = error
            return
        row_counts = self.out.reasons[pos]
        codes = np.flatnonzero(row_counts)
        if info.prefilter_message:
            reasons = {info.prefilter_message: num_nodes}
            self.rejectors[i] = frozenset((info.prefilter_plugin,))
            self.prefilter_rejector[i] = info.prefilter_plugin
        else:
            table = self.table
            reasons = {table.texts[int(c)]: int(row_counts[c]) for c in codes}
            self.rejectors[i] = frozenset(table.plugins[int(c)] for c in codes)
        self.counts[i] = reasons
        self.messages[i] = framework.fit_error_message(
            num_nodes, reasons, prefilter_message=info.prefilter_message
        )

    def result(self) -> PlacementResult:
        """The PlacementResult, once every position was added."""
        rolled_per_gang = self.rolled_per_gang
        for pos in self.rolled_positions:
            key = self.gang_keys[pos]
            assert key is not None
            i = self.order[pos]
            self.rolled[i] = True
            self.tentative[i] = self.state.names[int(self.out.rolled[pos])]
            reason = coscheduling.gang_reason(str(key), rolled_per_gang[key], self.minimums[key])
            self.messages[i] = framework.fit_error_message(
                self.num_nodes, {}, prefilter_message=reason
            )
        if rolled_per_gang:
            _gang_rejectors(self.gang_keys, self.order, self.rolled, self.rejectors)
        return PlacementResult(
            nodes=self.node_names,
            rows=np.array(self.row_list, dtype=np.int32),
            scores=np.array(self.score_list, dtype=np.int64),
            ties=self.tie_list,
            reason_counts=self.counts,
            rejectors=self.rejectors,
            prefilter_rejector=self.prefilter_rejector,
            messages=self.messages,
            errors=self.errors,
            rolled_back=self.rolled,
            tentative=self.tentative,
            num_nodes=self.num_nodes,
            classes=len(self.classes),
            kernel_seconds=0.0,
            encode_seconds=0.0,
        )


def _gang_rejectors(
    gang_keys: list[gang.GroupKey | None],
    order: list[int],
    rolled: npt.NDArray[np.bool_],
    rejectors: list[frozenset[str]],
) -> None:
    """A rolled-back member is unschedulable (not an error): Coscheduling rejected it, and
    so did whatever rejected the members that fitted nowhere (room they need may free)."""
    failed: dict[gang.GroupKey, frozenset[str]] = {}
    for pos, key in enumerate(gang_keys):
        if key is not None:
            failed[key] = failed.get(key, frozenset()) | rejectors[order[pos]]
    for pos, key in enumerate(gang_keys):
        i = order[pos]
        if key is not None and rolled[i]:
            rejectors[i] = failed[key] | {coscheduling.NAME}


def head(result: PlacementResult, count: int) -> PlacementResult:
    """The result of the first ``count`` pods alone (a segment cut short)."""
    return PlacementResult(
        nodes=result.nodes[:count],
        rows=result.rows[:count],
        scores=result.scores[:count],
        ties=result.ties[:count],
        reason_counts=result.reason_counts[:count],
        rejectors=result.rejectors[:count],
        prefilter_rejector=result.prefilter_rejector[:count],
        messages=result.messages[:count],
        errors=result.errors[:count],
        rolled_back=result.rolled_back[:count],
        tentative=result.tentative[:count],
        num_nodes=result.num_nodes,
        classes=result.classes,
        kernel_seconds=result.kernel_seconds,
        encode_seconds=result.encode_seconds,
    )


def merged(results: list[PlacementResult]) -> PlacementResult:
    """Results of consecutive segments of one burst as one, in the burst's order
    (core/reservations.py and core/volume_burst.py place a burst in segments)."""
    if len(results) == 1:
        return results[0]
    return PlacementResult(
        nodes=[node for r in results for node in r.nodes],
        rows=np.concatenate([r.rows for r in results]),
        scores=np.concatenate([r.scores for r in results]),
        ties=[count for r in results for count in r.ties],
        reason_counts=[counts for r in results for counts in r.reason_counts],
        rejectors=[plugins for r in results for plugins in r.rejectors],
        prefilter_rejector=[plugin for r in results for plugin in r.prefilter_rejector],
        messages=[message for r in results for message in r.messages],
        errors=[error for r in results for error in r.errors],
        rolled_back=np.concatenate([r.rolled_back for r in results]),
        tentative=[node for r in results for node in r.tentative],
        num_nodes=results[-1].num_nodes,
        classes=sum(r.classes for r in results),
        kernel_seconds=sum(r.kernel_seconds for r in results),
        encode_seconds=sum(r.encode_seconds for r in results),
        packing_moved=_shifted_moves(results),
    )


def _shifted_moves(results: list[PlacementResult]) -> dict[int, str | None]:
    """The segments' BurstPacking moves by their index in the whole burst."""
    moved: dict[int, str | None] = {}
    offset = 0
    for r in results:
        moved.update((offset + i, node) for i, node in r.packing_moved.items())
        offset += len(r.nodes)
    return moved
