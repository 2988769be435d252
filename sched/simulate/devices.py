"""Pods with resource claims in a simulation: placed after the others, as the runtime
places them.

With DynamicResources among the profile's filters, ``kubesalvo run`` places a burst's
pods with claims after its other pods, in runs of pods counting devices of one class or
alone (``core/dra/claiming.py``); a simulation does the same against the snapshot's
DeviceClasses, ResourceSlices and ResourceClaims, the devices of allocated claims held.
Nothing is written: what a placed pod reserved stays held for the pods after it. A
pod's claim that the resourceclaim controller has not made yet (a template without a
claim in the snapshot) keeps the pod pending with kube-scheduler's text, as in a
cluster. A gang member with claims stays in the burst, as the runtime keeps it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubesalvo.core.dra.allocator import allocated_devices
from kubesalvo.core.dra.claiming import place_claiming
from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.selectors import Selectors
from kubesalvo.core.place import PlacementResult, place_burst
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.profile import Profile
from kubesalvo.core.results import merged
from kubesalvo.core.snapshot import Snapshot
from kubesalvo.core.state import ClusterState
from kubesalvo.core.ties import TieBreak

__all__ = ["place_with_devices"]

Pod = dict[str, Any]


def _claiming(pod: Pod) -> bool:
    return bool((pod.get("spec") or {}).get("resourceClaims")) and gang.group_of(pod) is None


def place_with_devices(
    state: ClusterState,
    burst: list[Pod],
    profile: Profile,
    workloads: Sequence[Pod],
    ties: TieBreak,
    snapshot: Snapshot,
    place: Callable[..., PlacementResult] = place_burst,
) -> tuple[list[Pod], PlacementResult]:
    """The burst in the order it was placed (pods without claims first) and its result."""
    claiming = [p for p in burst if _claiming(p)]
    if names.DYNAMIC_RESOURCES not in profile.filters or not claiming:
        return burst, place(state, burst, profile, workloads=workloads, ties=ties)
    others = [p for p in burst if not _claiming(p)]
    parts = []
    if others:
        parts.append(place(state, others, profile, workloads=workloads, ties=ties))
    devices = snapshot.devices
    objects = DraObjects.of(
        devices.get("deviceclasses", []),
        devices.get("resourceclaims", []),
        devices.get("resourceslices", []),
    )
    held = allocated_devices(objects.claims.values())
    result, _ = place_claiming(
        place, state, claiming, profile, objects, Selectors(), held, ties, workloads
    )
    parts.append(result)
    return others + claiming, merged(parts)
