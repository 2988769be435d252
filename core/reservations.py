"""Rooms held for nominated pods while a burst is placed: pure state logic.

kube-scheduler's nominator counts a pending pod nominated to a node (by a preemption) on
that node for pods of lower or equal priority; pods of higher priority do not see it.
The cycle gives the nominated pods it holds outside the burst as :class:`Reservation`
(highest priority first); :func:`segments` cuts the burst where the set of rooms its pods
must respect changes, and :func:`place_reserving` places each segment with its rooms
assumed in the state, taking every room off again before anything else sees the state.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesalvo.core.place import PlacementResult, place_burst
from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.profile import Profile
from kubesalvo.core.results import merged
from kubesalvo.core.ties import TieBreak

__all__ = ["Reservation", "Segment", "place_reserving", "segments"]


@dataclass(frozen=True)
class Reservation:
    """A nominated pod's room, held on its nominated node while a burst is placed."""

    key: str
    pod: dict[str, Any]  # API dict
    node: str
    priority: int


@dataclass(frozen=True)
class Segment:
    """Pods ``[start, end)`` of a burst, placed with the first ``visible`` reservations
    (those of priority at least the pods') assumed in the state."""

    start: int
    end: int
    visible: int


def segments(
    priorities: Sequence[int],
    reservations: Sequence[Reservation],
    *,
    by_priority: bool = True,
    groups: Sequence[gang.GroupKey | None] = (),
) -> list[Segment]:
    """Cut a burst so that each pod sees exactly the reservations it must respect.

    kube-scheduler counts a nominated pod on its node for pods of lower or equal priority
    only. ``reservations`` are sorted by priority, highest first, so the ones a pod of
    priority p sees are a prefix of them; consecutive pods that see the same prefix share
    a segment. In PrioritySort order (priority descending) each distinct priority opens at
    most one segment; pods topped up from the backoffQ after the active ones may open a
    few more. Without PrioritySort (``by_priority`` False) the burst's order says nothing
    about priorities, and cutting it wherever priorities change could cut it per pod: the
    burst is one segment that respects every reservation (kube-scheduler would let a
    higher-priority pod take the room; kubesalvo keeps it for the nominated pod). A gang
    whose pods would land in two segments must be placed in one call, so the burst is
    then one segment the same way.
    """
    count = len(priorities)
    if not count:
        return []
    if not reservations or not by_priority:
        return [Segment(0, count, len(reservations))]
    ranks = [-r.priority for r in reservations]
    if ranks != sorted(ranks):
        raise ValueError("reservations must be sorted by priority, highest first")
    cuts: list[Segment] = []
    start = 0
    visible = bisect.bisect_right(ranks, -priorities[0])
    for i in range(1, count + 1):
        seen = bisect.bisect_right(ranks, -priorities[i]) if i < count else -1
        if seen != visible:
            cuts.append(Segment(start, i, visible))
            start, visible = i, seen
    if len(cuts) > 1 and any(groups):
        segment_of: dict[gang.GroupKey, int] = {}
        for index, cut in enumerate(cuts):
            for key in groups[cut.start : cut.end]:
                if key is not None and segment_of.setdefault(key, index) != index:
                    return [Segment(0, count, len(reservations))]
    return cuts


def place_reserving(
    state: Any,
    pods: Sequence[Mapping[str, Any]],
    profile: Profile,
    plan: Sequence[Segment],
    reservations: Sequence[Reservation],
    workloads: Sequence[Mapping[str, Any]] = (),
    gang_needed: Mapping[gang.GroupKey, int] | None = None,
    ties: TieBreak | None = None,
) -> PlacementResult:
    """``place_burst`` segment by segment, each with its reservations assumed in ``state``
    (worker thread, cache frozen), the segments drawing their ties from one stream. The
    reservations are taken off again whatever happens: they are never bound, reported or
    left in the state."""
    ties = ties or TieBreak()
    held = 0
    results: list[PlacementResult] = []
    try:
        for cut in plan:
            while held < cut.visible:
                reservation = reservations[held]
                state.assume_pod(reservation.pod, reservation.node)
                held += 1
            while held > cut.visible:
                held -= 1
                state.remove_pod_key(reservations[held].key)
            results.append(
                place_burst(
                    state,
                    pods[cut.start : cut.end],
                    profile,
                    workloads=workloads,
                    gang_needed=gang_needed,
                    ties=ties,
                )
            )
    finally:
        for reservation in reservations[:held]:
            state.remove_pod_key(reservation.key)
    return merged(results)
