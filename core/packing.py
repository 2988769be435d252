"""Packing after greedy: BurstPacking's improvement of a burst's assignment (issue 29).

The kernel places a burst pod by pod; the node count it reaches can be above the optimum
and, when capacity is short, it can leave out pods a better packing fits (bench/packing).
``improve`` takes its assignment and returns one at least as good - most pods placed
at each priority level, the highest first, then fewest nodes newly used - keeping every
guarantee: a pod goes only where its class passes the production filters
(``class_feasible``, from the caller) and its requests fit, immovable pods (those whose
placement depends on other pods: spread, inter-pod affinity, host ports, gangs, volumes
and claims) stay, and no level places fewer pods than the kernel did, nor any level
below it more at its expense (a lower priority never takes room a higher one needed).
Inside one level, a pod the kernel placed may be left out for two it could not: the
count is what matters. A node that held pods before the burst is never counted as
freed.

Small bursts are solved exactly (``solve_exact``: scipy's HiGHS under a time budget, the
kernel's result the fallback); every burst also gets the bounded moves
(``bounded_moves``): the burst's movable pods packed again first-fit-decreasing inside a
priority level (by two measures of size; when room is short also smallest first, and
with the largest set aside), pods left out placed by moving one pod out of their way,
then the least filled nodes emptied by moves and by swaps with smaller pods
(``empty_least_filled`` is the unbounded first version, kept for the yardstick). The
scans over nodes are in C (core/_pack.pyx); the work per burst is bounded by counts, not
by time, so that a burst is packed the same way on any machine. Inputs are plain
arrays: no I/O, no cluster objects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesalvo.core import _pack

__all__ = ["Burst", "Limits", "better", "empty_least_filled", "improve", "newly_used", "valid"]


def empty_least_filled(
    requests: npt.NDArray[np.int64],
    free: npt.NDArray[np.int64],
    assigned: npt.NDArray[np.int32],
    feasible: npt.NDArray[np.bool_],
    movable: npt.NDArray[np.bool_],
    held_before: npt.NDArray[np.bool_],
) -> npt.NDArray[np.int32]:
    """A new assignment using no more nodes than ``assigned``, every pod still fitting.

    ``requests``: pods x resources; ``free``: nodes x resources, the room left after the
    burst as ``assigned`` places it; ``assigned``: node per pod, -1 unplaced (unplaced
    pods stay so); ``feasible``: pods x nodes, the filters other than resources;
    ``movable``: pods that may move; ``held_before``: nodes with pods before the burst.
    """
    out = assigned.copy()
    room = free.copy()
    n_nodes = room.shape[0]
    capacity = np.maximum(room + _load(requests, out, n_nodes), 1)
    in_use = np.zeros(n_nodes, dtype=bool)
    in_use[out[out >= 0]] = True
    # Fill of a node: its largest share of any resource taken by the burst.
    fill = (_load(requests, out, n_nodes) / capacity).max(axis=1)
    candidates = [
        int(n) for n in np.argsort(fill, kind="stable") if in_use[n] and not held_before[n]
    ]
    scale = capacity.astype(np.float64)
    for node in candidates:
        pods = np.flatnonzero(out == node)
        if not movable[pods].all():
            continue
        # Largest first (by the pod's largest share of the node), as first-fit-decreasing.
        pods = pods[np.argsort(-(requests[pods] / capacity[node]).max(axis=1), kind="stable")]
        trial = room.copy()
        # Nodes that held pods before stay in use anyway: their room is free to take.
        targets = in_use | held_before
        targets[node] = False
        moves: list[tuple[int, int]] = []
        for pod in pods:
            target = _best_fit(trial, requests[pod], targets & feasible[pod], scale)
            if target < 0:
                break
            trial[target] -= requests[pod]
            moves.append((int(pod), target))
        else:
            trial[node] += requests[pods].sum(axis=0)
            room = trial
            in_use[node] = False
            for moved, target in moves:
                out[moved] = target
    return out


@dataclass(frozen=True)
class Burst:
    """One burst as the improvement sees it: plain arrays, no cluster objects.

    ``requests``: pods x resources; ``free``: nodes x resources, the room before the burst;
    ``assigned``: the kernel's node per pod (-1 unplaced); ``pod_class``: per pod, its row
    of ``class_feasible`` (classes x nodes: the production filters' verdict other than
    resources); ``movable``: pods that may be moved, or placed when the kernel left them
    out; ``level``: per pod its priority (higher goes first); ``held_before``: nodes with
    pods before the burst.
    """

    requests: npt.NDArray[np.int64]
    free: npt.NDArray[np.int64]
    assigned: npt.NDArray[np.int32]
    pod_class: npt.NDArray[np.intp]
    class_feasible: npt.NDArray[np.bool_]
    movable: npt.NDArray[np.bool_]
    level: npt.NDArray[np.int64]
    held_before: npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Limits:
    """How far the improvement goes: the exact solve's size limits and time budget, and
    how many of the least filled nodes the bounded moves try to empty."""

    exact_pods: int = 500
    exact_nodes: int = 100
    time_budget: float = 1.0
    emptied_nodes: int = 256


def newly_used(assigned: npt.NDArray[np.int32], held_before: npt.NDArray[np.bool_]) -> int:
    """Nodes the burst puts pods on that held none before (what a scale-down can take)."""
    used = np.zeros(len(held_before), dtype=bool)
    used[assigned[assigned >= 0]] = True
    return int(np.count_nonzero(used & ~held_before))


def valid(burst: Burst, out: npt.NDArray[np.int32]) -> bool:
    """Whether ``out`` keeps the guarantees: every pod it places fits and passes its
    class's filters there, and immovable pods stay where the kernel put them (that a
    priority level is not served worse is ``better``'s part)."""
    placed = out >= 0
    if (burst.assigned[~burst.movable] != out[~burst.movable]).any():
        return False
    movers = placed & burst.movable
    if not burst.class_feasible[burst.pod_class[movers], out[movers]].all():
        return False
    return bool((_load(burst.requests, out, len(burst.free)) <= burst.free).all())


def better(burst: Burst, out: npt.NDArray[np.int32], than: npt.NDArray[np.int32]) -> bool:
    """Whether ``out`` beats ``than``: more pods placed at the highest priority where they
    differ, then fewer nodes newly used."""
    return _worth(burst, out) > _worth(burst, than)


def _worth(burst: Burst, out: npt.NDArray[np.int32]) -> tuple[int, ...]:
    placed = out >= 0
    per_level = [
        int(np.count_nonzero(placed & (burst.level == level)))
        for level in np.unique(burst.level)[::-1].tolist()
    ]
    return (*per_level, -newly_used(out, burst.held_before))


def improve(burst: Burst, limits: Limits = Limits()) -> tuple[npt.NDArray[np.int32], str]:
    """A valid assignment at least as good as the kernel's, and how it was found
    ("exact", "moves" or "greedy" when nothing better was found)."""
    best = burst.assigned.astype(np.int32)
    how = "greedy"
    n_nodes = len(burst.free)
    movers = int(np.count_nonzero(burst.movable))
    if movers == 0:
        return best, how
    if movers <= limits.exact_pods and n_nodes <= limits.exact_nodes:
        exact = solve_exact(burst, limits.time_budget)
        if exact is not None and valid(burst, exact) and better(burst, exact, best):
            best, how = exact, "exact"
    moved = bounded_moves(burst, limits.emptied_nodes)
    if valid(burst, moved) and better(burst, moved, best):
        best, how = moved, "moves"
    return best, how


def bounded_moves(burst: Burst, emptied_nodes: int) -> npt.NDArray[np.int32]:
    """Greedy plus bounded moves. Starts: (a) the kernel's assignment with its unplaced
    movable pods added into the room left, (b) the movable pods of the nodes the burst
    alone uses packed again first-fit-decreasing (``repack``) by two measures of a pod's
    size (its dominant share, and its requests weighted by how scarce each resource is
    in the burst), and when the kernel left movable pods out (c) the same smallest
    first and (d) the largest pods set aside until the rest fits the room (``_SLACKS``),
    then the set-aside ones smallest first. The best ``_POLISHED`` valid starts are
    polished (``_polish``: pods left out placed by moving one pod out of their way, the
    ``emptied_nodes`` least filled nodes emptied, by moves and by swaps with smaller
    pods). The kernel's assignment when none helps."""
    best = burst.assigned.astype(np.int32)
    short = bool(((burst.assigned < 0) & burst.movable).any())
    movers = int(np.count_nonzero(burst.movable))
    small = movers <= _SMALL_BURST
    everyone = np.arange(len(burst.requests), dtype=np.intp)
    weighted = _weighted(burst)
    candidates = [_with_unplaced(burst)]
    # (a large burst: the dominant share alone, each repack scanning every node per run)
    dominant = _dominant(burst, everyone)
    for size in (dominant, weighted) if small else (dominant,):
        candidates.append(repack(burst, size))
        if small:  # (one pod at a time over every node: small bursts only)
            candidates.append(repack(burst, size, balanced=True))
        # Smallest first, or the largest set aside, place most pods when room is short,
        # and are not tried otherwise.
        if short:
            candidates.append(repack(burst, size, largest_first=False))
            candidates.extend(repack(burst, size, slack=slack) for slack in _SLACKS)
            if small:  # the pods kept, balanced over every node; then those set aside
                candidates.extend(
                    repack(burst, size, slack=slack, balanced=True) for slack in _SLACKS
                )
    starts = [c for c in candidates if valid(burst, c)]
    starts.sort(key=lambda c: _worth(burst, c), reverse=True)  # stable: first tried first
    polished = _POLISHED if small else 1
    for start in starts[:polished]:
        out = _polish(burst, start, emptied_nodes, weighted)
        if valid(burst, out) and better(burst, out, best):
            best = out
        elif better(burst, start, best):
            best = start
    return best


# When room is short: the shares of the aggregate room left free when choosing the pods
# a first-fit-decreasing pass packs (the larger pods beyond it go last, smallest first).
_SLACKS = (0.0, 0.01, 0.02, 0.04)
# The starts polished: the best by worth (each polish costs a pass over the nodes), and
# only the best one in bursts of more movable pods than _SMALL_BURST.
_POLISHED = 3
_SMALL_BURST = 2000
# The moves and swaps the drains of one polish make at most together: each looks at
# every placed pod, so the pods times the steps are bounded too (the time, whatever the
# burst).
_DRAIN_STEPS = 512
_DRAIN_WORK = 500_000


def _polish(
    burst: Burst, start: npt.NDArray[np.int32], emptied_nodes: int, size: npt.NDArray[np.float64]
) -> npt.NDArray[np.int32]:
    """``start`` improved: pods left out placed by moving one pod out of their way
    (``_relocate``), the least filled nodes emptied into the others (``_empty_nodes``),
    then drained by moves and swaps (``_drain``)."""
    out = start.copy()
    room = burst.free - _load(burst.requests, out, len(burst.free))
    in_use = burst.held_before.copy()
    in_use[out[out >= 0]] = True
    if ((out < 0) & burst.movable).any():
        _relocate(burst, out, room, in_use, emptied_nodes)
    emptied = _empty_nodes(burst, out.copy(), room, in_use, emptied_nodes)
    if valid(burst, emptied) and not better(burst, out, emptied):
        out = emptied
    else:  # (room and in_use follow ``emptied``: start again from ``out``)
        room = burst.free - _load(burst.requests, out, len(burst.free))
        in_use = burst.held_before.copy()
        in_use[out[out >= 0]] = True
    if ((out < 0) & burst.movable).any():
        return out  # a node emptied by swaps would take no pod left out: not worth it
    stuck = burst.held_before.copy()
    stuck[out[(out >= 0) & ~burst.movable]] = True
    nodes = np.flatnonzero(in_use & ~stuck)
    load = _load(burst.requests, out, len(room)) @ _scarcity(burst)
    steps = [min(_DRAIN_STEPS, _DRAIN_WORK // max(1, len(out)))]
    # The room of the nodes in use together: moves between them leave it as it is.
    spare = room[in_use].sum(axis=0)
    capacity = _capacity(burst)
    for node in nodes[np.argsort(load[nodes], kind="stable")][:emptied_nodes].tolist():
        if steps[0] <= 0:
            break
        # Cheap first: the other nodes in use together have room for the node's pods.
        fits = (spare - room[node] >= burst.free[node] - room[node]).all()
        if fits and _drain(burst, out, room, in_use, node, size, capacity, steps):
            spare -= burst.free[node]
    return out


def _drain(
    burst: Burst,
    out: npt.NDArray[np.int32],
    room: npt.NDArray[np.int64],
    in_use: npt.NDArray[np.bool_],
    node: int,
    size: npt.NDArray[np.float64],
    capacity: npt.NDArray[np.float64],
    steps: list[int],
) -> bool:
    """Empty ``node`` (all its pods movable) into the other nodes in use, each step moving
    one of its pods (the largest that can go) to the node it fits best, or else swapping
    it with a smaller pod of another node that then has room for it (the smallest such:
    the node's load shrinks every step). Applied to ``out``, ``room`` and ``in_use`` only
    when the node ends empty (True); ``steps`` (a shared count) bounds the work."""
    trial, left = out.copy(), room.copy()
    targets = in_use.copy()
    targets[node] = False
    requests, feasible, of = burst.requests, burst.class_feasible, burst.pod_class
    while steps[0] > 0:
        mine = np.flatnonzero(trial == node)
        if not len(mine):
            out[:], room[:] = trial, left
            in_use[node] = False
            return True
        steps[0] -= 1
        for pod in mine[np.argsort(-size[mine], kind="stable")].tolist():
            need = requests[pod]
            target = _best_fit(left, need, feasible[of[pod]] & targets, capacity)
            if target >= 0:
                trial[pod] = target
                left[target] -= need
                left[node] += need
                break
            # A smaller movable pod elsewhere whose node then fits this one, and which
            # fits here in its place.
            others = np.flatnonzero(
                (trial >= 0) & (trial != node) & burst.movable & (size < size[pod])
            )
            where = trial[others]
            ok = targets[where] & feasible[of[pod], where] & feasible[of[others], node]
            ok &= (left[where] + requests[others] >= need).all(axis=1)
            ok &= (left[node] + need >= requests[others]).all(axis=1)
            if not ok.any():
                continue
            chosen = others[ok]
            other = int(chosen[np.argmin(size[chosen])])
            there = int(trial[other])
            trial[pod], trial[other] = there, node
            left[there] += requests[other] - need
            left[node] += need - requests[other]
            break
        else:
            return False  # no pod of the node can go: it stays in use
    return False


def _scarcity(burst: Burst) -> npt.NDArray[np.float64]:
    """Per resource, the weight of one unit in a pod's size: how much of the room the
    movable pods ask for (the scarcer, the heavier), per unit of that room."""
    demand = burst.requests[burst.movable].sum(axis=0).astype(np.float64)
    supply = np.maximum(burst.free.sum(axis=0), 1).astype(np.float64)
    return demand / supply / supply


def _weighted(burst: Burst) -> npt.NDArray[np.float64]:
    """Each pod's size: its requests weighted by ``_scarcity`` (first-fit-decreasing by
    this packs tighter than by the dominant share when one resource binds)."""
    return np.asarray(burst.requests @ _scarcity(burst), dtype=np.float64)


# Nodes a left-out pod tries to make room on, by moving one of their pods elsewhere.
_RELOCATION_NODES = 16


def _relocate(
    burst: Burst,
    out: npt.NDArray[np.int32],
    room: npt.NDArray[np.int64],
    in_use: npt.NDArray[np.bool_],
    limit: int,
) -> None:
    """Swaps for the pods left out: by priority, smallest first, at most ``limit`` of
    them, each placed where it fits or else on a node (of the few closest to fitting) one
    of whose movable pods fits on another node and frees enough room by leaving."""
    pods = np.flatnonzero((out < 0) & burst.movable)
    order = np.lexsort((_dominant(burst, pods), -burst.level[pods]))
    capacity = _capacity(burst)

    def where(need: npt.NDArray[np.int64], feasible: npt.NDArray[np.bool_]) -> int:
        target = _best_fit(room, need, feasible, capacity)
        return target if target >= 0 else _make_room(burst, out, room, need, feasible, in_use)

    _place_each(burst, pods[order][:limit], out, room, in_use, where)


def _place_each(
    burst: Burst,
    pods: npt.NDArray[np.intp],
    out: npt.NDArray[np.int32],
    room: npt.NDArray[np.int64],
    in_use: npt.NDArray[np.bool_],
    where: Callable[[npt.NDArray[np.int64], npt.NDArray[np.bool_]], int],
) -> None:
    """Each pod in turn on the node ``where`` (its request, its class's feasible nodes)
    gives, or left out when it gives -1; once a pod is left out, the pods of its class
    and level are passed over (an identical pod found no room: neither will they)."""
    failed: set[tuple[int, int]] = set()
    for pod in pods.tolist():
        key = (int(burst.pod_class[pod]), int(burst.level[pod]))
        if key in failed:
            continue
        need = burst.requests[pod]
        target = where(need, burst.class_feasible[burst.pod_class[pod]])
        if target < 0:
            failed.add(key)
            continue
        out[pod] = target
        room[target] -= need
        in_use[target] = True


def _make_room(
    burst: Burst,
    out: npt.NDArray[np.int32],
    room: npt.NDArray[np.int64],
    need: npt.NDArray[np.int64],
    feasible: npt.NDArray[np.bool_],
    in_use: npt.NDArray[np.bool_],
) -> int:
    """A node made to fit ``need`` by moving one movable pod of it to another node (the
    move done in ``out`` and ``room``), or -1."""
    short = np.maximum(need - room, 0)
    capacity = _capacity(burst)
    closeness = (short / capacity).max(axis=1)
    nodes = np.flatnonzero(feasible & in_use)
    nodes = nodes[np.argsort(closeness[nodes], kind="stable")][:_RELOCATION_NODES]
    for node in nodes.tolist():
        movers = np.flatnonzero((out == node) & burst.movable)
        big_enough = (burst.requests[movers] >= short[node]).all(axis=1)
        for mover in movers[big_enough].tolist():
            asks = burst.requests[mover]
            where = burst.class_feasible[burst.pod_class[mover]].copy()
            where[node] = False
            # Rather a node in use, the fullest it fits on.
            other = _best_fit(room, asks, where, capacity, prefer=in_use)
            if other < 0:
                continue
            out[mover] = other
            room[other] -= asks
            room[node] += asks
            in_use[other] = True
            return node
    return -1


def _with_unplaced(burst: Burst) -> npt.NDArray[np.int32]:
    out = burst.assigned.astype(np.int32)
    room = burst.free - _load(burst.requests, out, len(burst.free))
    in_use = burst.held_before.copy()
    in_use[out[out >= 0]] = True
    _place_unplaced(burst, out, room, in_use)
    return out


def repack(
    burst: Burst,
    size: npt.NDArray[np.float64] | None = None,
    largest_first: bool = True,
    slack: float | None = None,
    balanced: bool = False,
) -> npt.NDArray[np.int32]:
    """The movable pods of the nodes only the burst uses, and the unplaced movable pods,
    placed again: by priority, then by ``size`` (per pod; the dominant share when None),
    the largest first (the smallest with ``largest_first`` False), a class's pods at a
    time, each run onto the fullest open node they fit (nodes in use anyway are open),
    a new node (the roomiest that fits) opened only when none does
    (``_pack.repack_runs``). With ``slack``, inside each priority the largest pods are set
    aside until the rest ask for at most ``1 - slack`` of the room in every resource:
    the rest go largest first, then those set aside smallest first. ``balanced``: the
    fewest of the roomiest nodes whose room covers the pods' requests in every resource
    are open from the start, and each pod goes to the open node whose room is most
    aligned with its requests (``_pack.repack_runs``'s balance): memory-heavy pods do not
    fill a node's memory and strand its cpu. Pods on nodes that hold pods from before
    the burst or immovable ones stay where the kernel put them."""
    out = burst.assigned.astype(np.int32)
    n_nodes = len(burst.free)
    stuck = burst.held_before.copy()
    stuck[out[(out >= 0) & ~burst.movable]] = True
    placed = out >= 0
    again = burst.movable & (~placed | ~stuck[np.where(placed, out, 0)])
    out[again] = -1
    room = np.ascontiguousarray(burst.free - _load(burst.requests, out, n_nodes))
    open_ = stuck.copy()
    open_[out[out >= 0]] = True
    pods = np.flatnonzero(again)
    if not len(pods):
        return out
    keys = np.concatenate(
        [burst.pod_class[pods, None], burst.level[pods, None], burst.requests[pods]], axis=1
    )
    groups, first, group_of = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    group_of = group_of.reshape(-1)
    count = np.bincount(group_of, minlength=len(groups))
    # Each run's pods in queue order, runs in placing order: priority, then size.
    share = (_dominant(burst, pods[first]) if size is None else size[pods[first]]).astype(float)
    level = groups[:, 1]
    if slack is None:
        runs = np.lexsort((-share if largest_first else share, -level))
    else:
        # Smallest first, the runs' requests add up; those beyond the room go aside.
        by_size = np.lexsort((share, -level))
        asked = np.cumsum(groups[by_size, 2:] * count[by_size, None], axis=0)
        aside = np.zeros(len(groups), dtype=bool)
        aside[by_size] = (asked > np.maximum(room, 0).sum(axis=0) * (1 - slack)).any(axis=1)
        runs = np.lexsort((np.where(aside, share, -share), aside, -level))
    rank = np.empty(len(groups), dtype=np.intp)
    rank[runs] = np.arange(len(groups))
    members = pods[np.argsort(rank[group_of], kind="stable")].astype(np.int64)
    run_start = np.zeros(len(groups) + 1, dtype=np.int64)
    run_start[1:] = np.cumsum(count[runs])
    capacity = _capacity(burst)
    largest = np.ascontiguousarray(capacity.max(axis=0))
    if balanced:
        # The roomiest closed nodes, in the order a repack would open them, until their
        # room covers what the pods ask for.
        closed = np.flatnonzero(~open_)
        closed = closed[np.argsort(-(room[closed] / largest).min(axis=1), kind="stable")]
        asked = burst.requests[pods].sum(axis=0) - np.maximum(room[open_], 0).sum(axis=0)
        covered = (np.cumsum(room[closed], axis=0) >= asked).all(axis=1)
        opened = int(np.argmax(covered)) + 1 if covered.any() else len(closed)
        open_[closed[:opened]] = True
    _pack.repack_runs(
        room,
        capacity,
        largest,
        _as_u8(burst.class_feasible),
        _as_u8(open_),
        np.ascontiguousarray(groups[runs, 2:], dtype=np.int64),
        np.ascontiguousarray(groups[runs, 0], dtype=np.int64),
        run_start,
        members,
        out,
        balanced,
    )
    return out


def _capacity(burst: Burst) -> npt.NDArray[np.float64]:
    """Per node and resource, its room before the burst (at least 1): the scale of the
    relative room the node scans compare."""
    return np.ascontiguousarray(np.maximum(burst.free, 1), dtype=np.float64)


def _as_u8(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint8]:
    return np.ascontiguousarray(mask).view(np.uint8)


_NO_NODES = np.zeros(0, dtype=np.uint8)
_ALL_NODES = np.zeros(0, dtype=np.int64)


def _best_fit(
    room: npt.NDArray[np.int64],
    need: npt.NDArray[np.int64],
    feasible: npt.NDArray[np.bool_],
    capacity: npt.NDArray[np.float64],
    prefer: npt.NDArray[np.bool_] | None = None,
) -> int:
    """The node (row of ``room``) that passes ``feasible``, has room for ``need`` and is
    left with the least room in its tightest resource, relative to ``capacity``; one in
    ``prefer`` when any of those fits; -1 when none fits (``_pack.best_fit``). Every
    move of the improvement picks its target node here."""
    return _pack.best_fit(
        np.ascontiguousarray(room),
        np.ascontiguousarray(need, dtype=np.int64),
        _as_u8(feasible),
        capacity,
        _NO_NODES if prefer is None else _as_u8(prefer),
        _ALL_NODES,
    )


def _dominant(burst: Burst, pods: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """Each pod's largest share of the fleet's largest node, per resource."""
    scale = np.maximum(burst.free.max(axis=0), 1)
    return (burst.requests[pods] / scale).max(axis=1)


def _place_unplaced(
    burst: Burst,
    out: npt.NDArray[np.int32],
    room: npt.NDArray[np.int64],
    in_use: npt.NDArray[np.bool_],
) -> None:
    pods = np.flatnonzero((out < 0) & burst.movable)
    if not len(pods):
        return
    # Higher priority first; inside a level, the largest dominant share first.
    order = np.lexsort((-_dominant(burst, pods), -burst.level[pods]))
    capacity = _capacity(burst)

    def where(need: npt.NDArray[np.int64], feasible: npt.NDArray[np.bool_]) -> int:
        # Nodes in use first; among them the best fit (least room left, relative).
        return _best_fit(room, need, feasible, capacity, prefer=in_use)

    _place_each(burst, pods[order], out, room, in_use, where)


def _empty_nodes(
    burst: Burst,
    out: npt.NDArray[np.int32],
    room: npt.NDArray[np.int64],
    in_use: npt.NDArray[np.bool_],
    limit: int,
) -> npt.NDArray[np.int32]:
    n_nodes = len(room)
    load = _load(burst.requests, out, n_nodes)
    capacity = _capacity(burst)
    fill = (load / capacity).max(axis=1)
    # Only nodes the burst alone uses, all of whose pods may move, are candidates.
    stuck = np.zeros(n_nodes, dtype=bool)
    stuck[out[(out >= 0) & ~burst.movable]] = True
    candidate = in_use & ~burst.held_before & ~stuck
    order = np.flatnonzero(candidate)
    order = order[np.argsort(fill[order], kind="stable")][:limit]
    for node in order.tolist():
        pods = np.flatnonzero(out == node)
        if not len(pods):
            continue
        pods = pods[np.argsort(-_dominant(burst, pods), kind="stable")]
        asked = burst.requests[pods]
        # Only the nodes in use with room for the smallest of these pods can take any:
        # the loop below works on them alone (after a repack, few nodes have room left).
        targets = in_use & (room >= asked.min(axis=0)).all(axis=1)
        targets[node] = False
        idx = np.flatnonzero(targets)
        trial = room[idx]
        if (trial.sum(axis=0) < asked.sum(axis=0)).any():
            continue
        scale = np.ascontiguousarray(capacity[idx])
        moves: list[tuple[int, int]] = []
        for pod in pods.tolist():
            need = burst.requests[pod]
            target = _best_fit(trial, need, burst.class_feasible[burst.pod_class[pod], idx], scale)
            if target < 0:
                break
            trial[target] -= need
            moves.append((pod, int(idx[target])))
        else:
            room[idx] = trial
            room[node] += asked.sum(axis=0)
            in_use[node] = False
            for pod, target in moves:
                out[pod] = target
    return out


def solve_exact(burst: Burst, time_budget: float) -> npt.NDArray[np.int32] | None:
    """The exact optimum for the movable pods (HiGHS through scipy's ``milp``): most pods
    placed, higher priorities first, then fewest nodes newly used. None when HiGHS found
    no solution within ``time_budget``."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    out = burst.assigned.astype(np.int32)
    n_nodes = len(burst.free)
    fixed = ~burst.movable
    fixed_out = np.where(fixed, out, -1).astype(np.int32)
    room = burst.free - _load(burst.requests, fixed_out, n_nodes)
    if (room < 0).any():
        return None
    movers = np.flatnonzero(burst.movable)
    # Interchangeable pods (one class, one priority) are one integer count per node.
    keys = np.concatenate(
        [burst.pod_class[movers, None], burst.level[movers, None], burst.requests[movers]], axis=1
    )
    groups, group_of = np.unique(keys, axis=0, return_inverse=True)
    group_of = group_of.reshape(-1)
    n_groups = len(groups)
    count = np.bincount(group_of, minlength=n_groups)
    requests = groups[:, 2:]
    weights = _level_weights(groups[:, 1], count, n_nodes)
    if weights is None:
        return None
    # A node in use anyway (pods before the burst, or immovable ones) costs nothing.
    used_anyway = burst.held_before.copy()
    used_anyway[fixed_out[fixed_out >= 0]] = True
    feasible = burst.class_feasible[groups[:, 0]]  # groups x nodes
    gi, ni = np.nonzero(feasible)
    n_x = len(gi)
    n_vars = n_x + n_nodes
    cost = np.concatenate([-weights[gi].astype(float), (~used_anyway).astype(float)])
    rows: list[npt.NDArray[np.intp]] = []
    cols: list[npt.NDArray[np.intp]] = []
    vals: list[npt.NDArray[np.float64]] = []
    lower: list[float] = []
    upper: list[float] = []
    row = 0
    # Per group: at most its pods.
    rows.append(gi.astype(np.intp))
    cols.append(np.arange(n_x, dtype=np.intp))
    vals.append(np.ones(n_x))
    lower.extend([0.0] * n_groups)
    upper.extend(count.astype(float).tolist())
    row += n_groups
    # Identical nodes (same room, same filters' verdict, not in use anyway) are opened in
    # order: the solver need not tell apart packings that only swap them.
    seen: dict[bytes, int] = {}
    for n in range(n_nodes):
        if used_anyway[n]:
            continue
        key = room[n].tobytes() + feasible[:, n].tobytes()
        if key in seen:
            rows.append(np.array([row, row], dtype=np.intp))
            cols.append(np.array([n_x + n, n_x + seen[key]], dtype=np.intp))
            vals.append(np.array([1.0, -1.0]))
            lower.append(-np.inf)
            upper.append(0.0)
            row += 1
        seen[key] = n
    # Per node and resource asked for: the pods' requests within the room, scaled by the
    # room so that the coefficients stay near 1 (HiGHS's tolerances are relative).
    for r in np.flatnonzero(requests.max(axis=0) > 0).tolist():
        scale = np.maximum(room[:, r], 1).astype(float)
        rows.append(row + ni.astype(np.intp))
        cols.append(np.arange(n_x, dtype=np.intp))
        vals.append(requests[gi, r] / scale[ni])
        rows.append(row + np.arange(n_nodes, dtype=np.intp))
        cols.append(n_x + np.arange(n_nodes, dtype=np.intp))
        vals.append(np.where(room[:, r] > 0, -1.0, 0.0))
        lower.extend([-np.inf] * n_nodes)
        upper.extend([0.0] * n_nodes)
        row += n_nodes
    matrix = coo_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(row, n_vars)
    ).tocsr()
    x_upper = np.minimum(count[gi], np.iinfo(np.int32).max).astype(float)
    y_lower = used_anyway.astype(float)
    result = milp(
        cost,
        constraints=LinearConstraint(matrix, lower, upper),
        integrality=np.ones(n_vars),
        bounds=Bounds(
            np.concatenate([np.zeros(n_x), y_lower]), np.concatenate([x_upper, np.ones(n_nodes)])
        ),
        options={"time_limit": max(0.01, time_budget)},
    )
    if result.x is None:
        return None
    take = np.round(result.x[:n_x]).astype(np.int64)
    # Hand each group's counts to its pods: those the kernel placed first, then in queue
    # order (the fewest pods change their fate).
    new = fixed_out.copy()
    for g in range(n_groups):
        members = movers[group_of == g]
        members = members[np.argsort(out[members] < 0, kind="stable")]
        slots = [
            int(n)
            for n, k in zip(ni[gi == g].tolist(), take[gi == g].tolist(), strict=True)
            for _ in range(k)
        ]
        if len(slots) > len(members):
            return None
        new[members[: len(slots)]] = slots
    return new


def _level_weights(
    levels: npt.NDArray[np.int64], count: npt.NDArray[np.int64], n_nodes: int
) -> npt.NDArray[np.int64] | None:
    """Per group, the worth of placing one of its pods: more than every node together,
    and at each priority more than every pod of the lower priorities together (a lower
    pod never takes room a higher one needed). None when that outgrows what HiGHS
    tells apart reliably (too many priority levels in one burst)."""
    weights = np.zeros(len(levels), dtype=np.int64)
    worth = n_nodes + 1
    below = 0
    for level in np.unique(levels).tolist():  # ascending
        mask = levels == level
        worth = max(worth, below + n_nodes + 1)
        weights[mask] = worth
        below += int((count[mask] * worth).sum())
    if below > 10**7:
        return None
    return weights


def _load(
    requests: npt.NDArray[np.int64], assigned: npt.NDArray[np.int32], n_nodes: int
) -> npt.NDArray[np.int64]:
    """Per node and resource, the requests of the pods ``assigned`` to it."""
    placed = assigned >= 0
    rows, asked = assigned[placed], requests[placed]
    if not len(rows) or int(np.abs(asked).max()) * len(rows) >= _EXACT_IN_DOUBLE:
        load = np.zeros((n_nodes, requests.shape[1]), dtype=np.int64)
        np.add.at(load, rows, asked)
        return load
    load = np.empty((n_nodes, requests.shape[1]), dtype=np.int64)
    for r in range(requests.shape[1]):  # per column: bincount, not the slower add.at
        load[:, r] = np.bincount(rows, weights=asked[:, r], minlength=n_nodes)
    return load


# bincount sums in doubles: exact while every partial sum stays below this.
_EXACT_IN_DOUBLE = 2**53
