"""Placing a burst: the public entry points around the compiled kernel (core/_place.pyx).

``place_burst(state, pods, profile)`` places the pods in queue order (a gang's pods
together, at the position of its first member), every node considered, and assumes the
placements in ``state``; ``plan`` does the same without touching ``state`` (simulate,
explain, what-if). Inputs are validated and converted once here; the kernel then runs
over the whole burst without the GIL. Ties between equally scored nodes are drawn from
``ties`` (core/ties.py), a stream started afresh from DEFAULT_SEED when none is given.

A burst is cut into chunks of at most a few thousand distinct classes so that the
per-class static tables (classes x nodes) stay within a fixed memory budget; the kernel
keeps its node usage across chunks, so a chunk sees every placement before it. With
several chunks a worker thread encodes the next chunk, gives the outcome of the one
before and assumes the classes done while the kernel runs one: see ``_run_chunks``.
core/results.py turns the kernel's outputs into outcomes.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from kubesalvo.core import _typedefs, burst_packing, volume_burst, volumes
from kubesalvo.core._codes import FIRST_RESOURCE as REASON_FIRST_RESOURCE
from kubesalvo.core._place import BurstKernel
from kubesalvo.core.dra.pod import PodDevices
from kubesalvo.core.encode import Encoder, PortTable, StaticTables, is_scalar_column
from kubesalvo.core.gc_pause import gc_paused
from kubesalvo.core.operands import (
    ClassColumns,
    Outputs,
    PodColumns,
    PortConflicts,
    ScoringColumns,
    kernel_settings,
)
from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.profile import Profile
from kubesalvo.core.reasons import ReasonTable
from kubesalvo.core.results import PlacementResult, Results
from kubesalvo.core.spread import ChunkLayout, SpreadEncoder
from kubesalvo.core.state import POD_COLUMN, ClusterState, pod_key
from kubesalvo.core.ties import TieBreak

__all__ = ["PlacementResult", "place_burst", "plan"]

# Cells (classes x nodes) of static tables per chunk, and bytes of class caches.
_CHUNK_CELLS = 8_000_000
_SLOT_BYTES = 64 << 20
# Encode the next chunk on a worker thread while this one runs the kernel (see
# _run_chunks); the tests turn it off to compare with the serial order.
_OVERLAP = True


def plan(
    state: ClusterState,
    pods: Sequence[Mapping[str, Any]],
    profile: Profile | None = None,
    *,
    workloads: Sequence[Mapping[str, Any]] = (),
    gang_needed: Mapping[gang.GroupKey, int] | None = None,
    devices: PodDevices | None = None,
    ties: TieBreak | None = None,
) -> PlacementResult:
    """Place ``pods`` as ``place_burst`` would, without changing ``state``."""
    return place_burst(
        state,
        pods,
        profile,
        commit=False,
        workloads=workloads,
        gang_needed=gang_needed,
        devices=devices,
        ties=ties,
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


# Values built from a profile (or its encoder plan's dicts) and the state's columns alone,
# the same for every burst of a steady stream: kept by the ids of the objects they come
# from and a key. The entry holds those objects, so no id in a key is reused while it is
# kept; readers never change the values.
_T = TypeVar("_T")
_kept_values: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}
_KEPT = 128


def _kept(owners: tuple[Any, ...], key: tuple[Any, ...], build: Callable[[], _T]) -> _T:
    full = (*map(id, owners), *key)
    kept = _kept_values.get(full)
    if kept is not None:
        return cast(_T, kept[1])
    if len(_kept_values) >= _KEPT:
        _kept_values.clear()
    value = build()
    _kept_values[full] = (owners, value)
    return value


def _profile_operands(
    profile: Profile, state: ClusterState, max_constraints: int
) -> tuple[ScoringColumns, Any]:
    """The kernel's scoring columns and settings (see ``_kept``)."""
    names = tuple(state.resource_names)
    return _kept(
        (profile,),
        ("operands", names, max_constraints),
        lambda: _build_operands(profile, state, max_constraints),
    )


def _build_operands(
    profile: Profile, state: ClusterState, max_constraints: int
) -> tuple[ScoringColumns, Any]:
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
    scoring = ScoringColumns(
        sc_cols, sc_weight, shape_util, shape_score, bal_cols, col_scalar, col_fit_check
    )
    return scoring, kernel_settings(profile, max_constraints)


def _reason_table(state: ClusterState, encoder: Encoder) -> ReasonTable:
    """The reason table of the encoder's plan's plugin codes (see ``_kept``)."""
    extensions, class_reasons = encoder.extensions, encoder.class_reasons
    names = tuple(state.resource_names)
    return _kept(
        (extensions, class_reasons),
        ("reasons", names),
        lambda: ReasonTable.for_columns(state.resource_names, extensions, class_reasons),
    )


def _kernel(
    state: ClusterState,
    profile: Profile,
    ports: PortTable,
    port_rows: list[int],
    spread: SpreadEncoder,
    ties: TieBreak,
) -> tuple[BurstKernel, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The kernel, and its copies of the requested and non-zero requested columns (which
    it updates with every placement it keeps)."""
    rows = state.rows
    scoring, settings = _profile_operands(profile, state, spread.max_constraints)
    # port keys x rows: a class's scans read its few keys along the rows
    port_use = np.zeros((max(1, len(ports.keys)), rows), dtype=np.int32)
    for row in port_rows:  # the rows holding a host port
        for port, count in state.ports[row].items():
            kid = ports.keys.get(port)
            if kid is not None:
                port_use[kid, row] = count
    dom, ndom = spread.domain_ids()
    requested = np.array(state.requested[:rows], dtype=_typedefs.QUANTITY, order="C")
    nonzero = np.array(state.nonzero_requested[:rows], dtype=_typedefs.QUANTITY, order="C")
    kernel = BurstKernel(
        np.ascontiguousarray(state.allocatable[:rows]),
        requested,
        nonzero,
        port_use,
        settings,
        scoring,
        dom,
        ndom,
        ties.state,
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
            out.ties[start:end],
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


@dataclass
class _Steps:
    """What ``_run_chunks`` does around the kernel."""

    operands: Callable[[int, int], _Chunk]  # positions [start, end): operands, before it runs
    finished: Callable[[int, int], None]  # positions [start, end) ran: their outcomes
    # (overlapped only) chunk k runs, every chunk before it ran and every chunk's
    # operands are built: assume what is done
    done_before: Callable[[int], None]


def _overlapped(chunks: list[tuple[int, int]]) -> bool:
    """Whether a worker thread encodes while the kernel runs (see _run_chunks)."""
    return _OVERLAP and len(chunks) > 1 and _cpus() > 1


def _run_chunks(
    kernel: BurstKernel,
    spread: SpreadEncoder,
    chunks: list[tuple[int, int]],
    steps: _Steps,
    out_node: npt.NDArray[np.int32],
) -> tuple[float, float]:
    """Run the kernel over the chunks in order; the kernel's seconds and the Python's.

    With several chunks (``_overlapped``) a worker thread builds the next chunk's operands
    and finishes the chunk before while this one runs the kernel (which releases the GIL
    at once, so the worker starts without waiting for a GIL switch), and runs
    ``done_before`` beside the last two chunks: only the spread counters' starting counts
    depend on what the running chunk places, and they are added once it is done. The two
    threads never run Python at the same time. Each chunk gets the same operands as in a
    serial run (one chunk, or ``_OVERLAP`` False), hence the same placements.
    """
    worker = None
    if _overlapped(chunks):
        worker = ThreadPoolExecutor(1, thread_name_prefix="kubesalvo-encode")
        # Its thread starts now, while this one encodes the first chunk, not as the kernel
        # should start (a new thread takes the GIL to start, and this one waits for it).
        worker.submit(int)

    def beside(k: int) -> _Chunk | None:
        """The worker's part while the kernel runs chunk k."""
        pending = steps.operands(*chunks[k + 1]) if k + 1 < len(chunks) else None
        if k:
            steps.finished(*chunks[k - 1])
        if k and k + 2 >= len(chunks):
            # Only once every chunk's operands are built: a pod that cannot be encoded
            # (say, malformed) fails the burst before the state records any of it.
            steps.done_before(k)
        return pending

    kernel_seconds = python_seconds = 0.0
    try:
        pending, seconds = _timed(steps.operands, *chunks[0]) if chunks else (None, 0.0)
        python_seconds += seconds
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
            running = worker.submit(_timed, beside, k) if worker is not None else None
            python_seconds += time.perf_counter() - began
            cpu = time.thread_time()
            wall = _timed(kernel.run)[1]
            cpu = time.thread_time() - cpu
            kernel_seconds += wall
            began = time.perf_counter()
            if running is not None:
                pending, seconds = running.result()
                python_seconds += seconds
                began = time.perf_counter()
                if worker is not None and (last or _sharing_a_cpu(cpu, wall)):
                    # The two threads took turns on one CPU (a busy machine): the rest
                    # runs in turn, without the switches. This chunk's outcome is due.
                    worker.shutdown(wait=True)
                    worker = None
                    steps.finished(start, end)
            else:
                steps.finished(start, end)
                if not last:
                    pending = steps.operands(*chunks[k + 1])
            if not last:  # later chunks count these placements
                spread.record(chunk.class_ids, chunk.local, out_node[start:end])
            python_seconds += time.perf_counter() - began
    finally:
        if worker is not None:
            worker.shutdown(wait=True)  # after an error, wait for what the worker runs
    return kernel_seconds, python_seconds


def _sharing_a_cpu(cpu: float, wall: float) -> bool:
    """Whether the kernel ran well under its wall time: it waited for a CPU (beside the
    worker, the machine's other work taking the rest) or for the GIL at its end."""
    return cpu < 0.7 * wall


class _DisksInBurst(Exception):
    """A burst placed whole turned out to hold pods with in-tree disks (the encoder saw
    them while classing the pods, at no cost per pod): it is placed in segments."""


def place_burst(
    state: ClusterState,
    pods: Sequence[Mapping[str, Any]],
    profile: Profile | None = None,
    *,
    commit: bool = True,
    workloads: Sequence[Mapping[str, Any]] = (),
    gang_needed: Mapping[gang.GroupKey, int] | None = None,
    devices: PodDevices | None = None,
    ties: TieBreak | None = None,
) -> PlacementResult:
    """Place ``pods`` in queue order; with ``commit`` assume each placement in ``state``.

    ``ties``: the random stream a pod's node is drawn from among the nodes sharing its
    best total, as kube-scheduler's selectHost draws (advanced by the burst); None starts
    one from DEFAULT_SEED, so that a call without it is reproducible.

    ``gang_needed``: per pod group, how many of its pods in this burst must be placed for
    any to be (its minimum less its members already bound; 0 or less: no constraint);
    a group it does not name needs its ``minAvailable`` label
    (``core/plugins/coscheduling/gang.py``).

    ``workloads`` are the Services, ReplicationControllers, ReplicaSets and StatefulSets
    (API JSON) whose selectors give pods without spread constraints the profile's
    default ones, as kube-scheduler does.

    A pod whose ``status.nominatedNodeName`` names a node of the state takes that node,
    without scoring, when it passes every filter there (kube-scheduler's
    evaluateNominatedNode: the room its preemption freed); otherwise it is placed as
    any other pod.

    With BurstPacking in ``profile`` (``profile.packing``), the kernel's plan of the burst
    is improved first and its pods placed with the improved nodes as their nominated ones
    (``core/burst_packing.py``); ``packing_moved`` of the result names the pods moved.

    ``devices``: DynamicResources' state (``core.dra.pod.prefilter``) of the one pod with
    resource claims placed by this call (``pods`` is then that pod alone); without it a
    pod with claims is rejected.
    """
    if devices is not None and len(pods) != 1:
        raise ValueError("a pod with resource claims is placed alone")
    if profile is not None and profile.packing is not None and devices is None and len(pods) > 1:
        # BurstPacking: the kernel's plan improved, handed back as nominated nodes.
        def planner(burst, plain, trial_ties):
            return place_burst(
                state,
                burst,
                plain,
                commit=False,
                workloads=workloads,
                gang_needed=gang_needed,
                ties=trial_ties,
            )

        plain = dataclasses.replace(profile, packing=None)
        packed = burst_packing.pack(state, pods, profile, planner, ties)
        if packed is None:
            profile = plain
        elif packed.classified is not None:
            # The plan's classes serve the placement too (the state has not changed and
            # a nominated node is no part of a class): the burst is encoded once.
            with gc_paused():
                result = _place_burst(
                    state,
                    packed.pods,
                    plain,
                    commit=commit,
                    workloads=workloads,
                    gang_needed=gang_needed,
                    ties=ties or TieBreak(),
                    classified=packed.classified,
                    taken=packed.taken,
                )
            return packed.result(result)
        else:
            result = place_burst(
                state,
                packed.pods,
                plain,
                commit=commit,
                workloads=workloads,
                gang_needed=gang_needed,
                ties=ties,
            )
            return packed.result(result)
    with gc_paused():
        segmented = functools.partial(
            _place_burst, devices=devices, ties=ties or TieBreak(), segmented=True
        )
        if state.storage.objects[volumes.CLAIMS]:
            delayed = volume_burst.delayed_positions(pods, state.storage)
            if delayed:
                return volume_burst.place_in_segments(
                    segmented, state, pods, profile, delayed, commit, workloads, gang_needed
                )
        try:
            return _place_burst(
                state,
                pods,
                profile,
                commit=commit,
                workloads=workloads,
                gang_needed=gang_needed,
                devices=devices,
                ties=ties or TieBreak(),
            )
        except _DisksInBurst:
            delayed = volume_burst.delayed_positions(pods, state.storage)
            return volume_burst.place_in_segments(
                segmented, state, pods, profile, delayed, commit, workloads, gang_needed
            )


def _place_burst(
    state: ClusterState,
    pods: Sequence[Mapping[str, Any]],
    profile: Profile | None,
    *,
    commit: bool,
    workloads: Sequence[Mapping[str, Any]],
    gang_needed: Mapping[gang.GroupKey, int] | None = None,
    devices: PodDevices | None = None,
    ties: TieBreak,
    segmented: bool = False,
    classified: tuple[Encoder, npt.NDArray[np.intp]] | None = None,
    taken: npt.NDArray[np.int32] | None = None,
) -> PlacementResult:
    """``classified``: an encoder of ``state`` under ``profile`` that classed these pods
    already, and each pod's class (BurstPacking's plan): the pods are not classed again.
    ``taken`` (with ``classified``): per pod, its nominated node's row, which BurstPacking
    proved the kernel takes for every pod in turn (``burst_packing.pack``): the outcome is
    written without running the kernel (``_taken``)."""
    profile = profile or Profile.default()
    began = time.perf_counter()
    keys = [gang.group_of(p) for p in pods]
    refused = gang.malformed_groups(pods) if any(keys) else {}
    order, gang_min, gang_last, minimums = _queue_order(pods, keys, gang_needed, refused)
    ordered = [pods[i] for i in order]
    if classified is not None:
        encoder = classified[0]
        class_of = classified[1][np.array(order, dtype=np.intp)].astype(np.int32)
    else:
        encoder = Encoder(state, profile, devices)
        class_of = encoder.classify(ordered, complete=False)  # completed chunk by chunk
    if encoder.has_disks and not segmented and len(pods) > 1:
        raise _DisksInBurst  # nothing is committed yet
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
    if taken is not None:
        rows = taken[np.array(order, dtype=np.intp)].astype(_typedefs.NODE)
        placing = _Placing(state, ordered, order, [keys[i] for i in order], class_of, classes)
        result = _taken(placing, encoder, class_requests, rows, commit, minimums, refused)
        result.encode_seconds = time.perf_counter() - began
        return result
    ports = PortTable()
    port_rows = state.rows_with_ports()
    for row in port_rows:
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
    kernel, kernel_requested, kernel_nonzero = _kernel(
        state, profile, ports, port_rows, spread, ties
    )

    n = len(ordered)
    out_node = np.full(n, -1, dtype=_typedefs.NODE)
    out_score = np.zeros(n, dtype=_typedefs.SCORE)
    nreasons = REASON_FIRST_RESOURCE + nres
    out_reasons = np.zeros((n, nreasons), dtype=np.int32)
    out_gang = np.full(n, -1, dtype=_typedefs.NODE)
    out_error = np.zeros(n, dtype=np.uint8)
    out_ties = np.zeros(n, dtype=np.int32)
    p_gang_min = np.array(gang_min, dtype=np.int32)
    p_gang_last = np.array(gang_last, dtype=np.uint8)
    p_nominated = np.full(n, -1, dtype=np.int32)  # set chunk by chunk (operands)
    # per slot and row: s_feas, s_local, s_perm, s_iperm and s_tree (16 bytes per node:
    # its maximum and how many leaves hold it, 2 x leaves nodes)
    slot_budget = max(4, _SLOT_BYTES // (56 * max(1, state.rows)))
    outputs = Outputs(out_node, out_score, out_reasons, out_gang, out_error, out_ties)
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
        if pod_keys is None:  # before the state records any pod of the burst
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

    chunks = list(_chunks(class_of, gang_min, gang_last, state.rows))

    def done_before(k: int) -> None:
        # The classes below the first of chunk k and later ones have all their pods placed.
        if commit:
            start = chunks[k][0]
            assume(int(class_of[start:].min()), before=start)

    if commit and _overlapped(chunks):
        spread.freeze_groups()  # later chunks count the state's pods as before the burst
    results = Results(
        _reason_table(state, encoder),
        state,
        ordered,
        order,
        [keys[i] for i in order],
        minimums,
        refused,
        class_of,
        classes,
        outputs,
    )
    encode_seconds = time.perf_counter() - began
    kernel_seconds, chunk_seconds = _run_chunks(
        kernel, spread, chunks, _Steps(operands, results.add, done_before), out_node
    )
    encode_seconds += chunk_seconds

    t0 = time.perf_counter()
    result = results.result()
    result.kernel_seconds = kernel_seconds
    result.encode_seconds = encode_seconds
    if not commit:
        pod_class = np.empty(n, dtype=np.intp)
        pod_class[order] = class_of
        result.classified = (encoder, pod_class)
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


@dataclass
class _Placing:
    """A burst in queue order: its pods, their positions in the burst, gangs and classes."""

    state: ClusterState
    ordered: list[Mapping[str, Any]]
    order: list[int]
    gang_keys: list[gang.GroupKey | None]
    class_of: npt.NDArray[np.int32]
    classes: list[Any]


def _taken(
    placing: _Placing,
    encoder: Encoder,
    class_requests: list[dict[int, int]],
    rows: npt.NDArray[np.int32],
    commit: bool,
    minimums: dict[gang.GroupKey, int],
    refused: Mapping[gang.GroupKey, str],
) -> PlacementResult:
    """What the kernel outputs when each pod (queue order) takes its nominated node
    ``rows[pos]``, unscored and drawing no tie (``_run``'s first branch), and what the
    state then assumes: BurstPacking proved every one passes every filter in turn."""
    state, class_of, classes = placing.state, placing.class_of, placing.classes
    n = len(rows)
    nres = len(state.resource_names)
    outputs = Outputs(
        rows,
        np.zeros(n, dtype=_typedefs.SCORE),
        np.zeros((n, REASON_FIRST_RESOURCE + nres), dtype=np.int32),
        np.full(n, -1, dtype=_typedefs.NODE),
        np.zeros(n, dtype=np.uint8),
        np.ones(n, dtype=np.int32),
    )
    results = Results(
        _reason_table(state, encoder),
        state,
        placing.ordered,
        placing.order,
        placing.gang_keys,
        minimums,
        refused,
        class_of,
        classes,
        outputs,
    )
    results.add(0, n)
    result = results.result()
    if not commit:
        pod_class = np.empty(n, dtype=np.intp)
        pod_class[placing.order] = class_of
        result.classified = (encoder, pod_class)
        return result
    pod_keys = [pod_key(pod) for pod in placing.ordered]
    # As _place_burst: the resources in one step unless a pod of the burst is counted
    # already (it moves: counted per pod).
    whole = not any(state.pod_record(key) is not None for key in pod_keys)
    _commit(state, pod_keys, class_of, classes, class_requests, rows, resources=not whole)
    if whole:
        c_req = np.zeros((len(classes), state.requested.shape[1]), dtype=_typedefs.QUANTITY)
        for cid, by_column in enumerate(class_requests):
            c_req[cid, list(by_column)] = list(by_column.values())
        c_req[:, POD_COLUMN] = 1
        at = rows.astype(np.intp)
        np.add.at(state.requested, at, c_req[class_of])
        nonzero = np.array([info.nonzero_add for info in classes], dtype=_typedefs.QUANTITY)
        np.add.at(state.nonzero_requested, at, nonzero.reshape(-1, 2)[class_of])
    return result


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
        if info.spec.get("volumes"):  # the claims its pods use (the volume filters)
            node_names = state.names
            for key, row in zip(keys[start:end], rows[start:end], strict=True):
                state.storage.use(key, info.namespace, info.spec, node_names[row] or "")
