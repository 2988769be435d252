"""Pods with resource claims placed in-process, one after the other, as the runtime does.

``kubesalvo run`` places a burst's pods with claims after its other pods: runs of pods
whose claims ask counts of one device class as one segment each (``core/dra/slots.py``),
every other pod alone with DynamicResources' PreFilter and Filter (``core/dra/pod.py``),
each pod's reserved devices held for the pods after it. ``place_claiming`` does the same
against one set of DRA objects, for ``kubesalvo simulate`` (which binds nothing: what a
pod reserved stays held, and ``reserved`` writes it into the run's copy of the claims
before the next pod is looked at) and for the tests comparing the counted path with the
one-pod path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubesalvo.core.dra import slots
from kubesalvo.core.dra.allocator import DeviceId
from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.pod import Reserved, prefilter
from kubesalvo.core.dra.selectors import Selectors
from kubesalvo.core.results import PlacementResult, merged
from kubesalvo.core.ties import TieBreak

__all__ = ["place_claiming"]

Obj = Mapping[str, Any]


def place_claiming(
    place: slots.Place,
    state: Any,
    pods: Sequence[Obj],
    profile: Any,
    objects: DraObjects,
    selectors: Selectors,
    held: set[DeviceId],
    ties: TieBreak,
    workloads: Sequence[Obj] = (),
    count_alike: bool = True,
    timeout: float = 0.0,
    reserved_by: Callable[[Obj, Reserved], None] | None = None,
) -> tuple[PlacementResult, list[Reserved | None]]:
    """Place ``pods`` (each with claims) in order, committed in ``state``; returns their
    result and what each placed pod reserved. ``held`` (devices no allocation may take)
    grows by every reservation, and ``reserved_by(pod, reserved)`` is called for each
    before the next pod is looked at. ``count_alike`` False places every pod alone;
    ``timeout``: DynamicResources' filterTimeout for a pod placed alone (seconds)."""
    parts: list[PlacementResult] = []
    reserved: list[Reserved | None] = []
    rest, limit = list(pods), len(pods) if count_alike else 1

    def alone(pod: Obj) -> None:
        devices = prefilter(pod, objects, selectors, held, set(), timeout)
        result = place(state, [pod], profile, devices=devices, ties=ties, workloads=workloads)
        parts.append(result)
        taken = None if result.nodes[0] is None else devices.reserve(result.nodes[0])
        if taken is not None:
            held.update(taken.devices)
            if reserved_by is not None:
                reserved_by(pod, taken)
        reserved.append(taken)

    while rest:
        run = slots.countable_run(rest, objects, selectors, held, set(), limit) if limit > 1 else []
        done = None
        if len(run) > 1:
            done = slots.place_run(
                place, state, rest[: len(run)], run, profile, objects, selectors, held, ties,
                workloads,
            )  # fmt: skip
        if done is None or done.result is None:
            alone(rest.pop(0))
            continue
        if done.reserved:
            parts.append(done.result)
        for pod, taken in zip(rest, done.reserved, strict=False):
            held.update(taken.devices)
            if reserved_by is not None:
                reserved_by(pod, taken)
            reserved.append(taken)
        rest = rest[len(done.reserved) :]
        if done.cut:
            alone(rest.pop(0))
            limit = max(1, 2 * len(done.reserved))
        else:
            limit *= 2
    return merged(parts), reserved
