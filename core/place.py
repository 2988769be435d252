"""Placing a burst: the public entry points around the compiled kernel (core/_place.pyx).

``place_burst(state, pods, profile)`` places the pods in queue order (a gang's pods
together, at the position of its first member), every node considered, and assumes the
placements in ``state``; ``plan`` does the same without touching ``state`` (simulate,
explain, what-if). Inputs are validated and converted once here; the kernel then runs
over the whole burst without the GIL.

A burst is cut into chunks of at most a few thousand distinct classes so that the
per-class static tables (classes x nodes) stay within a fixed memory budget; the kernel
keeps its node usage across chunks, so a chunk sees every placement before it. With
several chunks a worker thread encodes the next chunk while the kernel runs one (and,
during the last, assumes the classes already done): see ``_run_chunks``.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core import _typedefs, gang
from kubesalvo.core._codes import FIRST_RESOURCE as REASON_FIRST_RESOURCE
from kubesalvo.core._place import BurstKernel
from kubesalvo.core.encode import Encoder, PortTable, StaticTables, is_scalar_column
from kubesalvo.core.operands import (
    ClassColumns,
    Outputs,
    PodColumns,
    PortConflicts,
    ScoringColumns,
    kernel_settings,
)
from kubesalvo.core.plugins import coscheduling, framework
from kubesalvo.core.profile import Profile
from kubesalvo.core.reasons import ReasonTable
from kubesalvo.core.spread import ChunkLayout, SpreadEncoder
from kubesalvo.core.state import POD_COLUMN, ClusterState, pod_key

__all__ = ["PlacementResult", "place_burst", "plan"]

# Cells (classes x nodes) of static tables per chunk, and bytes of class caches.
_CHUNK_CELLS = 8_000_000
_SLOT_BYTES = 64 << 20
# Encode the next chunk on a worker thread while this one runs the kernel (see
# _run_chunks); the tests turn it off to compare with the serial order.
_OVERLAP = True


@dataclass
class PlacementResult:
    """Where each pod of a burst went (in the order the pods were given)."""

    nodes: list[str | None]  # node name, None when not placed
    rows: npt.NDArray[np.int32]  # ClusterState row, -1 when not placed
    scores: npt.NDArray[np.int64]  # total weighted score of the chosen node
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
    placed: int = field(init=False)

    def __post_init__(self) -> None:
        self.placed = int((self.rows >= 0).sum())


def plan(
    state: ClusterState,
    pods: Sequence[Mapping[str, Any]],
    profile: Profile | None = None,
    *,
    workloads: Sequence[Mapping[str, Any]] = (),
    gang_needed: Mapping[gang.GroupKey, int] | None = None,
) -> PlacementResult:
    """Place ``pods`` as ``place_burst`` would, without changing ``state``."""
    return place_burst(
        state, pods, profile, commit=False, workloads=workloads, gang_needed=gang_needed
    )


def _queue_order(
    pods: Sequence[Mapping[str, Any]],
    keys: list[gang.GroupKey | None],
    needed: Mapping[gang.GroupKey, int] | None = None,
    refused: Mapping[gang.GroupKey, str] | None = None,
) -> tuple[list[int], list[int], list[bool], dict[gang.GroupKey, int]]:
    """Pod indices in placement order, each position's gang minimum and run end, minimums.

    ``needed`` overrides the minimum of the groups it names (the runtime's count: the
    group's minimum less its members already bound); a group needing 0 more is placed pod
    by pod. A ``refused`` group gets a minimum above its size: none of it stays placed."""
    if not any(keys):  # no gang: queue order as it came
        n = len(keys)
        return list(range(n)), [0] * n, [False] * n, {}
    minimums = gang.group_minimums(pods)
    if needed:
        minimums.update((key, count) for key, count in needed.items() if key in minimums)
    for group in refused or ():
        minimums[group] = keys.count(group) + 1
    members: dict[gang.GroupKey, list[int]] = {}
    for i, key in enumerate(keys):
        if key is not None:
            members.setdefault(key, []).append(i)
    order: list[int] = []
    gang_min: list[int] = []
    gang_last: list[bool] = []
    for i, key in enumerate(keys):
        if key is None:
            order.append(i)
            gang_min.append(0)
            gang_last.append(False)
        elif members[key][0] == i:
            run = members[key]
            order.extend(run)
            gang_min.extend([max(0, minimums[key])] * len(run))
            gang_last.extend([False] * (len(run) - 1) + [True])
    return order, gang_min, gang_last, minimums


def _kernel(
    state: ClusterState, profile: Profile, ports: PortTable, spread: SpreadEncoder
) -> tuple[BurstKernel, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The kernel, and its copies of the requested and non-zero requested columns (which
    it updates with every placement it keeps)."""
    rows = state.rows
    columns = state.resource_index
    strategy = profile.fit.scoring_strategy
    sc_cols = np.array([columns.get(r.name, -1) for r in strategy.resources], dtype=np.int32)
    sc_weight = np.array([r.weight for r in strategy.resources], dtype=np.int64)
    shape_util = np.array([p.utilization for p in strategy.shape] or [0], dtype=np.int64)
    shape_score = np.array([p.score * 10 for p in strategy.shape] or [0], dtype=np.int64)
    bal_cols = np.array(
        [columns.get(r.name, -1) for r in profile.balanced_allocation.resources], dtype=np.int32
    )
    col_scalar = np.array([is_scalar_column(n) for n in state.resource_names], dtype=np.uint8)
    fit_args = profile.fit
    col_fit_check = np.array(
        [
            not (
                "/" in n
                and "kubernetes.io/" not in n
                and (
                    n in fit_args.ignored_resources
                    or n.split("/")[0] in fit_args.ignored_resource_groups
                )
            )
            for n in state.resource_names
        ],
        dtype=np.uint8,
    )
    port_use = np.zeros((rows, max(1, len(ports.keys))), dtype=np.int32)
    for row in range(rows):
        for port, count in state.ports[row].items():
            kid = ports.keys.get(port)
            if kid is not None:
                port_use[row, kid] = count
    dom, ndom = spread.domain_ids()
    requested = np.array(state.requested[:rows], dtype=_typedefs.QUANTITY, order="C")
    nonzero = np.array(state.nonzero_requested[:rows], dtype=_typedefs.QUANTITY, order="C")
    kernel = BurstKernel(
        np.ascontiguousarray(state.allocatable[:rows]),
        requested,
        nonzero,
        port_use,
        kernel_settings(profile, spread.max_constraints),
        ScoringColumns(
            sc_cols, sc_weight, shape_util, shape_score, bal_cols, col_scalar, col_fit_check
        ),
        dom,
        ndom,
    )
    return kernel, requested, nonzero


def _chunks(class_of: npt.NDArray[np.int32], gang_min: list[int], gang_last: list[bool], rows: int):
    """Cut positions [start, end) so that each chunk has a bounded number of classes."""
    budget = max(16, _CHUNK_CELLS // max(1, rows))
    if len(np.unique(class_of)) < budget:  # the whole burst is one chunk
        if len(class_of):
            yield 0, len(class_of)
        return
    start, seen = 0, set()
    for pos, cid in enumerate(class_of.tolist()):
        seen.add(cid)
        in_gang_run = gang_min[pos] > 0 and not gang_last[pos]
        if len(seen) >= budget and not in_gang_run:
            yield start, pos + 1
            start, seen = pos + 1, set()
    if start < len(class_of):
        yield start, len(class_of)


@dataclass
class _Chunk:
    """The kernel's operands for the pods [start, end) of the burst (see load_chunk), with
    the spread rows still to be counted (SpreadEncoder.counted)."""

    start: int
    end: int
    class_ids: npt.NDArray[np.int32]  # the chunk's classes, ascending (local -> global id)
    local: npt.NDArray[np.intp]  # per pod of the chunk, its local class
    per_class: list[int]  # pods per local class
    classes: ClassColumns
    tables: StaticTables
    ports: PortConflicts
    spread: ChunkLayout
    pods: PodColumns
    out: Outputs
    nslots: int


def _chunk_operands(
    encoder: Encoder,
    spread: SpreadEncoder,
    ports: PortTable,
    columns: ClassColumns,
    pods: PodColumns,
    out: Outputs,
    slot_budget: int,
    start: int,
    end: int,
) -> _Chunk:
    """The operands of the pods [start, end), from the burst's ``columns`` (per class;
    c_score_error is set here, once the chunk's classes are complete), ``pods`` (per pod;
    p_class holding global class ids) and ``out`` (per pod)."""
    global_ids, local = np.unique(pods.p_class[start:end], return_inverse=True)
    chunk_classes = global_ids.tolist()
    per_class = np.bincount(local, minlength=len(global_ids))
    encoder.complete(chunk_classes)
    classes = encoder.classes
    columns.c_score_error[global_ids] = [bool(classes[cid].score_error) for cid in chunk_classes]
    conf_off, conf, own_off, own = [0], [], [0], []
    for cid in chunk_classes:
        class_ports = classes[cid].ports
        if class_ports:  # most classes take no host port
            clash: set[int] = set()
            for port in class_ports:
                clash.update(ports.clashes(port))
                own.append(ports.keys[port])
            conf.extend(sorted(clash))
        conf_off.append(len(conf))
        own_off.append(len(own))
    return _Chunk(
        start,
        end,
        global_ids,
        local,
        per_class.tolist(),
        ClassColumns(
            np.ascontiguousarray(columns.c_req[global_ids]),
            np.ascontiguousarray(columns.c_nz[global_ids]),
            np.ascontiguousarray(columns.c_nz_add[global_ids]),
            columns.c_score_error[global_ids],
        ),
        encoder.tables(chunk_classes),
        PortConflicts(
            np.array(conf_off, dtype=np.int32),
            np.array(conf or [0], dtype=np.int32),
            np.array(own_off, dtype=np.int32),
            np.array(own or [0], dtype=np.int32),
        ),
        spread.layout(chunk_classes),
        PodColumns(
            local.astype(np.int32),
            pods.p_gang_min[start:end],
            pods.p_gang_last[start:end],
            pods.p_nominated[start:end],
        ),
        Outputs(
            out.node[start:end],
            out.score[start:end],
            out.reasons[start:end],
            out.rolled[start:end],
            out.error[start:end],
        ),
        # only classes with several pods in the chunk cache anything (see _place.pyx)
        min(int(np.count_nonzero(per_class > 1)), slot_budget),
    )


def _cpus() -> int:
    """The CPUs this process may run on (with one, a second thread only adds switches)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def _timed(work: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    began = time.perf_counter()
    done = work(*args)
    return done, time.perf_counter() - began


def _run_chunks(
    kernel: BurstKernel,
    spread: SpreadEncoder,
    chunks: list[tuple[int, int]],
    operands: Callable[[int, int], _Chunk],
    out_node: npt.NDArray[np.int32],
    while_last: Callable[[int, int], None],
) -> tuple[float, float]:
    """Run the kernel over the chunks in order; the kernel's seconds and the encoding's.

    With several chunks a worker thread builds the next chunk's operands while this one
    runs the kernel (which releases the GIL at once, so the worker starts without waiting
    for a GIL switch): only the spread counters' starting counts depend on what the
    running chunk places, and they are added once it is done. During the last chunk the
    worker runs ``while_last(start, end)`` instead (a serial run does not call it). The
    two threads never run Python at the same time. Each chunk gets the same operands as
    in a serial run (one chunk, or ``_OVERLAP`` False), hence the same placements.
    """
    worker = None
    if _OVERLAP and len(chunks) > 1 and _cpus() > 1:
        worker = ThreadPoolExecutor(1, thread_name_prefix="kubesalvo-encode")
        # Its thread starts now, while this one encodes the first chunk, not as the kernel
        # should start (a new thread takes the GIL to start, and this one waits for it).
        worker.submit(int)
    kernel_seconds = encode_seconds = 0.0
    try:
        pending, seconds = _timed(operands, *chunks[0]) if chunks else (None, 0.0)
        encode_seconds += seconds
        for k, (start, end) in enumerate(chunks):
            began = time.perf_counter()
            chunk = pending
            assert chunk is not None
            counted = spread.counted(chunk.spread, chunk.per_class)
            kernel.load_chunk(
                chunk.classes,
                chunk.tables,
                chunk.ports,
                counted,
                chunk.pods,
                chunk.out,
                chunk.nslots,
            )
            last = k + 1 == len(chunks)
            beside = None
            if worker is not None:
                if last:
                    beside = worker.submit(_timed, while_last, start, end)
                else:
                    beside = worker.submit(_timed, operands, *chunks[k + 1])
            encode_seconds += time.perf_counter() - began
            kernel_seconds += _timed(kernel.run)[1]
            if beside is not None:
                pending, seconds = beside.result()
            elif not last:
                pending, seconds = _timed(operands, *chunks[k + 1])
            encode_seconds += seconds
            if not last:  # later chunks count these placements
                began = time.perf_counter()
                spread.record(chunk.class_ids, chunk.local, out_node[start:end])
                encode_seconds += time.perf_counter() - began
    finally:
        if worker is not None:
            worker.shutdown(wait=True)  # after an error, wait for what the worker runs
    return kernel_seconds, encode_seconds


def place_burst(
    state: ClusterState,
    pods: Sequence[Mapping[str, Any]],
    profile: Profile | None = None,
    *,
    commit: bool = True,
    workloads: Sequence[Mapping[str, Any]] = (),
    gang_needed: Mapping[gang.GroupKey, int] | None = None,
) -> PlacementResult:
    """Place ``pods`` in queue order; with ``commit`` assume each placement in ``state``.

    ``gang_needed``: per pod group, how many of its pods in this burst must be placed for
    any to be (its minimum less its members already bound; 0 or less: no constraint);
    a group it does not name needs its ``minAvailable`` label (``core/gang.py``).

    ``workloads`` are the Services, ReplicationControllers, ReplicaSets and StatefulSets
    (API JSON) whose selectors give pods without spread constraints the profile's
    default ones, as kube-scheduler does.

    A pod whose ``status.nominatedNodeName`` names a node of the state takes that node,
    without scoring, when it passes every filter there (kube-scheduler's
    evaluateNominatedNode: the room its preemption freed); otherwise it is placed as
    any other pod.
    """
    # The burst allocates many small objects that all live until it ends: cyclic GC
    # passes over them find nothing to free and cost several percent of the burst.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _place_burst(
            state, pods, profile, commit=commit, workloads=workloads, gang_needed=gang_needed
        )
    finally:
        if was_enabled:
            gc.enable()


def _place_burst(
    state: ClusterState,
    pods: Sequence[Mapping[str, Any]],
    profile: Profile | None,
    *,
    commit: bool,
    workloads: Sequence[Mapping[str, Any]],
    gang_needed: Mapping[gang.GroupKey, int] | None = None,
) -> PlacementResult:
    profile = profile or Profile.default()
    began = time.perf_counter()
    keys = [gang.group_of(p) for p in pods]
    refused = gang.malformed_groups(pods) if any(keys) else {}
    order, gang_min, gang_last, minimums = _queue_order(pods, keys, gang_needed, refused)
    ordered = [pods[i] for i in order]
    encoder = Encoder(state, profile)
    class_of = encoder.classify(ordered, complete=False)  # completed chunk by chunk
    classes = encoder.classes
    # Resource columns and port keys of the whole burst exist before the kernel copies.
    # (class, column, amount) of every request; registering columns may add some
    req_class: list[int] = []
    req_column: list[int] = []
    req_amount: list[int] = []
    columns: dict[str, int] = {}
    # per class, its non-zero requests by column (the records _commit gives the state)
    class_requests: list[dict[int, int]] = []
    for cid, info in enumerate(classes):
        by_column: dict[int, int] = {}
        for res, amount in info.requests.items():
            column = columns.get(res)
            if column is None:
                column = columns[res] = state.resource_column(res)
            req_class.append(cid)
            req_column.append(column)
            req_amount.append(amount)
            if amount:
                by_column[column] = amount
        class_requests.append(by_column)
    ports = PortTable()
    for row in range(state.rows):
        for port in state.ports[row]:
            ports.key(port)
    for info in classes:
        for port in info.ports:
            ports.key(port)
    nres = len(state.resource_names)
    c_req_all = np.zeros((len(classes), nres), dtype=_typedefs.QUANTITY)
    c_req_all[req_class, req_column] = req_amount
    c_req_all[:, POD_COLUMN] = 1
    c_nz_all = np.array([info.nonzero for info in classes], dtype=_typedefs.QUANTITY).reshape(-1, 2)
    c_nz_add_all = np.array([info.nonzero_add for info in classes], dtype=_typedefs.QUANTITY)
    c_nz_add_all = c_nz_add_all.reshape(-1, 2)
    c_score_error = np.zeros(len(classes), dtype=np.uint8)  # set as the classes complete
    spread = SpreadEncoder(encoder, workloads)
    spread.prepare(range(len(classes)))
    kernel, kernel_requested, kernel_nonzero = _kernel(state, profile, ports, spread)

    n = len(ordered)
    out_node = np.full(n, -1, dtype=_typedefs.NODE)
    out_score = np.zeros(n, dtype=_typedefs.SCORE)
    nreasons = REASON_FIRST_RESOURCE + nres
    out_reasons = np.zeros((n, nreasons), dtype=np.int32)
    out_gang = np.full(n, -1, dtype=_typedefs.NODE)
    out_error = np.zeros(n, dtype=np.uint8)
    p_gang_min = np.array(gang_min, dtype=np.int32)
    p_gang_last = np.array(gang_last, dtype=np.uint8)
    p_nominated = np.full(n, -1, dtype=np.int32)  # set chunk by chunk (operands)
    slot_budget = max(4, _SLOT_BYTES // (40 * max(1, state.rows)))
    outputs = Outputs(out_node, out_score, out_reasons, out_gang, out_error)
    columns_all = ClassColumns(c_req_all, c_nz_all, c_nz_add_all, c_score_error)
    pod_columns = PodColumns(class_of, p_gang_min, p_gang_last, p_nominated)

    def operands(start: int, end: int) -> _Chunk:
        row_of = state.row_of
        p_nominated[start:end] = [
            row_of.get(((pod.get("status") or {}).get("nominatedNodeName")) or "", -1)
            for pod in ordered[start:end]
        ]
        return _chunk_operands(
            encoder, spread, ports, columns_all, pod_columns, outputs, slot_budget, start, end
        )

    pod_keys: list[str] | None = None
    whole = True  # no pod of the burst is counted in the state yet
    assumed_below = 0  # the classes below this one are assumed in the state

    def assume(last: int, before: int | None = None) -> None:
        """Assume the placements of the classes [assumed_below, last), of the pods before
        position ``before``; calls by ascending classes assume as one call would."""
        nonlocal pod_keys, whole, assumed_below
        if pod_keys is None:
            pod_keys = [pod_key(pod) for pod in ordered]
            whole = not any(state.pod_record(key) is not None for key in pod_keys)
        _commit(
            state,
            pod_keys,
            class_of,
            classes,
            class_requests,
            out_node,
            resources=not whole,
            before=before,
            class_range=(assumed_below, last),
        )
        assumed_below = last

    def while_last(start: int, end: int) -> None:
        if commit:  # the classes below the last chunk's first have all their pods placed
            assume(int(class_of[start:end].min()), before=start)

    encode_seconds = time.perf_counter() - began
    chunks = list(_chunks(class_of, gang_min, gang_last, state.rows))
    kernel_seconds, chunk_seconds = _run_chunks(
        kernel, spread, chunks, operands, out_node, while_last
    )
    encode_seconds += chunk_seconds

    t0 = time.perf_counter()
    result = _result(
        ReasonTable.for_columns(state.resource_names, encoder.extensions),
        state,
        ordered,
        order,
        [keys[i] for i in order],
        minimums,
        refused,
        class_of,
        classes,
        out_node,
        out_score,
        out_reasons,
        out_gang,
        out_error,
    )
    result.kernel_seconds = kernel_seconds
    result.encode_seconds = encode_seconds
    if commit:
        # The kernel's copies hold exactly the state's columns plus the kept placements,
        # unless a pod of the burst was counted already (it moves: counted per pod).
        assume(len(classes))
        if whole:
            rows, nres = kernel_requested.shape
            state.requested[:rows, :nres] = kernel_requested
            state.nonzero_requested[:rows] = kernel_nonzero
    result.encode_seconds += time.perf_counter() - t0
    return result


def _result(
    table: ReasonTable,
    state: ClusterState,
    ordered: list[Mapping[str, Any]],
    order: list[int],
    gang_keys: list[gang.GroupKey | None],
    minimums: dict[gang.GroupKey, int],
    refused: Mapping[gang.GroupKey, str],
    class_of: npt.NDArray[np.int32],
    classes: list[Any],
    out_node: npt.NDArray[np.int32],
    out_score: npt.NDArray[np.int64],
    out_reasons: npt.NDArray[np.int32],
    out_gang: npt.NDArray[np.int32],
    out_error: npt.NDArray[np.uint8],
) -> PlacementResult:
    n = len(ordered)
    num_nodes = state.node_count
    node_names: list[str | None] = [None] * n
    counts: list[dict[str, int]] = [{}] * n
    rejectors: list[frozenset[str]] = [frozenset()] * n
    prefilter_rejector = [""] * n
    messages = [""] * n
    errors = [""] * n
    rolled = np.zeros(n, dtype=bool)
    rolled_per_gang: dict[gang.GroupKey, int] = {}
    tentative: list[str | None] = [None] * n
    for rolled_pos in np.flatnonzero(out_gang >= 0):
        gang_key = gang_keys[rolled_pos]
        assert gang_key is not None  # only gang members are rolled back
        rolled_per_gang[gang_key] = rolled_per_gang.get(gang_key, 0) + 1
    # Python lists: this loop runs once per pod, and indexing numpy arrays is slower.
    node_of, score_of, names = out_node.tolist(), out_score.tolist(), state.names
    row_list, score_list = [-1] * n, [0] * n
    success = framework.success_message
    for pos, pod in enumerate(ordered):
        i = order[pos]
        row = node_of[pos]
        group = gang_keys[pos]
        refusal = refused.get(group) if refused and group is not None else None
        if refusal is None and row >= 0:
            row_list[i] = row
            score_list[i] = score_of[pos]
            node = names[row]
            assert node is not None  # the kernel picks rows that hold a node
            node_names[i] = node
            meta = pod.get("metadata") or {}
            messages[i] = success(meta.get("namespace") or "default", meta.get("name", ""), node)
        elif refusal is not None:  # Coscheduling's PreFilter: the kernel's try is undone
            counts[i] = {refusal: num_nodes}
            messages[i] = framework.fit_error_message(num_nodes, {}, prefilter_message=refusal)
            rejectors[i] = frozenset((coscheduling.NAME,))
            prefilter_rejector[i] = coscheduling.NAME
        elif out_gang[pos] >= 0:
            key = gang_keys[pos]
            assert key is not None
            rolled[i] = True
            tentative[i] = state.names[int(out_gang[pos])]
            reason = coscheduling.gang_reason(str(key), rolled_per_gang[key], minimums[key])
            messages[i] = framework.fit_error_message(num_nodes, {}, prefilter_message=reason)
        else:
            info = classes[class_of[pos]]
            error = info.error or (info.score_error if out_error[pos] else "")
            if num_nodes == 0:  # kube-scheduler fails the attempt before any plugin runs
                error = framework.ERR_NO_NODES_AVAILABLE
            if error:
                errors[i] = messages[i] = error
                continue
            row_counts = out_reasons[pos]
            codes = np.flatnonzero(row_counts)
            if info.prefilter_message:
                reasons = {info.prefilter_message: num_nodes}
                rejectors[i] = frozenset((info.prefilter_plugin,))
                prefilter_rejector[i] = info.prefilter_plugin
            else:
                reasons = {table.texts[int(c)]: int(row_counts[c]) for c in codes}
                rejectors[i] = frozenset(table.plugins[int(c)] for c in codes)
            counts[i] = reasons
            messages[i] = framework.fit_error_message(
                num_nodes, reasons, prefilter_message=info.prefilter_message
            )
    if rolled_per_gang:
        _gang_rejectors(gang_keys, order, rolled, rejectors)
    return PlacementResult(
        nodes=node_names,
        rows=np.array(row_list, dtype=np.int32),
        scores=np.array(score_list, dtype=np.int64),
        reason_counts=counts,
        rejectors=rejectors,
        prefilter_rejector=prefilter_rejector,
        messages=messages,
        errors=errors,
        rolled_back=rolled,
        tentative=tentative,
        num_nodes=num_nodes,
        classes=len(classes),
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


def _commit(
    state,
    pod_keys,
    class_of,
    classes,
    class_requests,
    out_node,
    resources=True,
    before=None,
    class_range=None,
) -> None:
    """Assume every placement in the state (as kube-scheduler's cache does before binding),
    class by class; ``pod_keys``: the pods' keys in queue order, ``class_requests``: each
    class's non-zero requests by resource column. ``before``: only the pods at positions
    before it; ``class_range``: only the class ids in [first, last) (a commit in parts by
    ascending class ranges makes the same calls in the same order as one)."""
    placed = np.flatnonzero(out_node[:before] >= 0)
    if class_range is not None and len(placed):
        first, last = class_range
        of_placed = class_of[placed]
        placed = placed[(of_placed >= first) & (of_placed < last)]
    if not len(placed):
        return
    of_class = class_of[placed]
    by_class = np.argsort(of_class, kind="stable")
    placed, of_class = placed[by_class], of_class[by_class]
    cuts = (np.flatnonzero(np.diff(of_class)) + 1).tolist()
    # Python lists and locals: this loop runs once per class (per pod of distinct pods).
    keys = [pod_keys[pos] for pos in placed.tolist()]
    rows, class_ids = out_node[placed].tolist(), of_class.tolist()
    add = state.add_placed_many
    for start, end in zip([0, *cuts], [*cuts, len(keys)], strict=True):
        cid = class_ids[start]
        info = classes[cid]
        add(
            keys[start:end],
            rows[start:end],
            info.namespace,
            info.labels,
            class_requests[cid],
            info.nonzero_add,
            info.ports,
            info.affinity,
            resources,
        )
