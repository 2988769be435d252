"""A burst whose pods bind volumes at their first consumer, placed in segments.

Pods with unbound WaitForFirstConsumer claims compete for the same static volumes: as in
kube-scheduler, where each pod's Reserve assumes the volumes it was given before the
next pod is filtered, a pod must not be offered a volume an earlier pod of the burst
took. The kernel cannot express that, so such a burst is cut after each of those pods;
each segment is placed as a burst of its own (against the state the earlier segments
left), then VolumeBinding's Reserve assumes the chosen volumes in
``ClusterState.storage`` (``core/plugins/volume_binding.reserve``) and the next segment's
filter sees them taken. Bursts without such pods never come here.

Only used when the caller binds what is reserved (``StorageObjects.bind_delayed``).
With ``commit`` False (``plan``) the segments are committed and then taken back, with
the volumes they assumed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core import volumes
from kubesalvo.core.encode import Encoder
from kubesalvo.core.plugins import node_volume_limits, volume_binding
from kubesalvo.core.profile import Profile
from kubesalvo.core.results import PlacementResult, merged
from kubesalvo.core.state import ClusterState, pod_key

__all__ = ["delayed_positions", "place_in_segments"]


def delayed_positions(
    pods: Sequence[Mapping[str, Any]], storage: volumes.StorageObjects
) -> list[int]:
    """Positions of the pods a later pod of the burst must see placed first: those with
    an unbound claim of a WaitForFirstConsumer class (when the caller binds them), a
    ReadWriteOncePod claim (in use once placed) or a volume of a CSI driver a CSINode
    limits (counted on its node once placed)."""
    found = []
    limited = {d for per_node in node_volume_limits.limits(storage).values() for d in per_node}
    for i, pod in enumerate(pods):
        spec = pod.get("spec") or {}
        if not spec.get("volumes"):
            continue
        namespace = (pod.get("metadata") or {}).get("namespace") or "default"
        for _, name in volumes.claim_volumes(spec):
            claim = storage.claim(namespace, name)
            if claim is None:
                continue
            if volumes.READ_WRITE_ONCE_POD in ((claim.get("spec") or {}).get("accessModes") or ()):
                found.append(i)
                break
            if limited and node_volume_limits.claim_volume_id(claim, storage)[0] in limited:
                found.append(i)
                break
            if not storage.bind_delayed or volumes.is_fully_bound(claim):
                continue
            if (claim.get("spec") or {}).get("volumeName"):
                continue
            try:
                if volumes.delays_binding(claim, storage):
                    found.append(i)
                    break
            except volumes.BindingModeUnset:
                continue  # the filter reports it
    return found


@dataclass
class _Pod:
    """A pod as the class Reserve reads (``framework.PodClass``)."""

    namespace: str
    spec: Mapping[str, Any]
    label_map: dict[str, str] = field(default_factory=dict)


def place_in_segments(
    place: Callable[..., PlacementResult],
    state: ClusterState,
    pods: Sequence[Mapping[str, Any]],
    profile: Profile | None,
    delayed: list[int],
    commit: bool,
    workloads: Sequence[Mapping[str, Any]],
    gang_needed: Any,
) -> PlacementResult:
    """``place`` (core/place.py's burst) over segments ending at each delayed pod."""
    profile = profile or Profile.default()
    storage = state.storage
    cuts = [i + 1 for i in delayed if i + 1 < len(pods)]
    bounds = list(zip([0, *cuts], [*cuts, len(pods)], strict=True))
    delayed_set = set(delayed)
    parts: list[PlacementResult] = []
    bindings: list[list[tuple[str, str]]] = [[] for _ in pods]
    assumed_here: list[str] = []
    placed_keys: list[str] = []
    try:
        for start, end in bounds:
            segment = list(pods[start:end])
            result = place(
                state,
                segment,
                profile,
                commit=True,
                workloads=workloads,
                gang_needed=gang_needed,
            )
            parts.append(result)
            for offset, node in enumerate(result.nodes):
                if node is None:
                    continue
                pod = segment[offset]
                placed_keys.append(pod_key(pod))
                if start + offset in delayed_set:
                    meta = pod.get("metadata") or {}
                    chosen = volume_binding.reserve(
                        Encoder(state, profile),
                        int(result.rows[offset]),
                        _Pod(meta.get("namespace") or "default", pod.get("spec") or {}),
                        storage,
                    )
                    bindings[start + offset] = chosen
                    assumed_here.extend(pv for _, pv in chosen if pv)
                    if commit:  # for the runtime's PreBind (sched/volume_prebind.py)
                        storage.reserved[pod_key(pod)] = chosen
    finally:
        if not commit:
            for key in placed_keys:
                state.remove_pod_key(key)
            for pv in assumed_here:
                storage.assumed.pop(pv, None)
    return _joined(parts, bindings)


def _joined(parts: list[PlacementResult], bindings: list[list[tuple[str, str]]]) -> PlacementResult:
    """One result of the segments' results, in the pods' order, with the volumes chosen."""
    return dataclasses.replace(merged(parts), volume_bindings=bindings)
