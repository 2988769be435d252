"""A burst whose pods bind volumes at their first consumer, placed in segments.

Pods with unbound WaitForFirstConsumer claims compete for the same static volumes: as in
kube-scheduler, where each pod's Reserve assumes the volumes it was given before the
next pod is filtered, a pod must not be offered a volume an earlier pod of the burst
took. The kernel cannot express that, so such a burst is cut after each of those pods;
each segment is placed as a burst of its own (against the state the earlier segments
left), then VolumeBinding's Reserve assumes the chosen volumes in
``ClusterState.storage`` (``core/plugins/volume_binding.reserve``) and the next segment's
filter sees them taken. Bursts without such pods never come here.

With StorageCapacityScoring on (VolumeBinding's args have a shape), a pod's capacity
score depends on the volume it would take on each node: a run is counted only while every
node's free volumes for it have one size (each pod of the run then scores each node
alike, ``volume_slots.capacity_scores``); otherwise its pods go one segment each, scored
against the storage as the earlier pods left it.

Only used when the caller binds what is reserved (``StorageObjects.bind_delayed``).
With ``commit`` False (``plan``) the segments are committed and then taken back, with
the volumes they assumed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core import in_tree_disks, volume_slots, volumes
from kubesalvo.core.encode import Encoder
from kubesalvo.core.plugins import coscheduling, names, node_volume_limits, volume_binding
from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.plugins.framework import fit_error_message
from kubesalvo.core.profile import Profile
from kubesalvo.core.results import PlacementResult, head, merged
from kubesalvo.core.state import ClusterState, pod_key

__all__ = ["COUNT_ALIKE", "delayed_positions", "place_in_segments"]

# Runs of alike claiming pods are placed as one segment, their free volumes counted per
# node (core/volume_slots.py); the tests turn it off to compare with one segment per pod.
COUNT_ALIKE = True


def _limited_drivers(storage: volumes.StorageObjects) -> set[str]:
    """The CSI drivers some CSINode limits (their volumes count on the node once placed)."""
    return {d for per_node in node_volume_limits.limits(storage).values() for d in per_node}


def delayed_positions(
    pods: Sequence[Mapping[str, Any]], storage: volumes.StorageObjects
) -> list[int]:
    """Positions of the pods a later pod of the burst must see placed first: those with
    an in-tree disk (VolumeRestrictions), an unbound claim of a WaitForFirstConsumer
    class (when the caller binds them), a ReadWriteOncePod claim (in use once placed) or
    a volume of a CSI driver a CSINode limits (counted on its node once placed)."""
    found = []
    limited = _limited_drivers(storage)
    for i, pod in enumerate(pods):
        spec = pod.get("spec") or {}
        if not spec.get("volumes"):
            continue
        if in_tree_disks.disks(spec):  # its disks may conflict with a later pod's
            found.append(i)
            continue
        namespace = (pod.get("metadata") or {}).get("namespace") or "default"
        for name, _ in volumes.pod_claims(spec):
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
    devices: Any = None  # no DynamicResources cycle state: Reserve reads volumes only


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
    """``place`` (core/place.py's burst) over segments ending at each delayed pod, or at
    the last of a run of delayed pods whose free volumes are counted per node
    (``core/volume_slots.py``).

    A gang may span segments: each segment places its members one by one (its minimum
    relaxed to 0), and once every segment is placed, a gang with fewer members placed
    than its minimum is taken back whole (its volumes unassumed), as one burst would."""
    minimums = _gang_minimums(pods, gang_needed)
    relaxed = {key: 0 for key in minimums} if minimums else gang_needed
    profile = profile or Profile.default()
    run = _Segments(place, state, profile, workloads, relaxed)
    limited = _limited_drivers(state.storage)
    alike: dict[int, tuple[volumes.Object, volume_slots.Signature]] = {}
    if COUNT_ALIKE and not any(gang.group_of(pod) for pod in pods):
        for i in delayed:
            found = volume_slots.countable_claim(pods[i], state.storage, limited)
            if found is not None:
                alike[i] = found
    delayed_set = set(delayed)
    exhausted: set[volume_slots.Signature] = set()
    limit = len(pods)  # the most pods of a run counted together
    try:
        start = 0
        position = 0  # into ``delayed``
        alone = -1  # a delayed pod to place in a segment of its own (its run was cut there)
        while start < len(pods):
            while position < len(delayed) and delayed[position] < start:
                position += 1
            if position == len(delayed):
                run.plain(pods, start, len(pods), delayed_set)
                break
            first = delayed[position]
            group = [first]
            signature = None
            if first != alone and first in alike and alike[first][1] not in run.uncountable:
                signature = alike[first][1]
                most = len(pods) if signature in exhausted else limit
                for later in delayed[position + 1 :]:
                    if len(group) >= most or later not in alike or alike[later][1] != signature:
                        break
                    group.append(later)
            if signature is not None and signature in exhausted:
                # No volume is left for any of them: none takes one, and the kernel
                # places the run as one segment, each pod with its own reasons.
                run.plain(pods, start, group[-1] + 1, delayed_set)
                start = group[-1] + 1
                continue
            if signature is None or len(group) == 1:
                run.plain(pods, start, first + 1, delayed_set)
                start = first + 1
                continue
            cut, left = run.counted(pods, start, group, [alike[i][0] for i in group], signature)
            if cut is None:
                start = group[-1] + 1
                limit = 2 * limit
            else:
                # A run cut short is placed again from its first pod left: the next runs
                # start small and double while they succeed, so that many pods left
                # without a volume they can use cost one short run each.
                limit = max(1, 2 * sum(1 for i in group if i < cut))
                start = cut
                if left:
                    alone = cut
                else:
                    exhausted.add(signature)
        result = merged(run.parts)
        if minimums:
            _take_back_short_gangs(state, pods, run, result, minimums)
    finally:
        if not commit:
            for key in run.placed_keys:
                state.remove_pod_key(key)
            for pv in run.assumed_here:
                state.storage.assumed.pop(pv, None)
    bindings: list[list[tuple[str, str]]] = [[] for _ in pods]
    for index, chosen in run.bindings.items():
        bindings[index] = chosen
    if commit:  # for the runtime's PreBind (sched/volume_prebind.py)
        for index, chosen in run.bindings.items():
            state.storage.reserved[pod_key(pods[index])] = chosen
    return dataclasses.replace(result, volume_bindings=bindings)


def _gang_minimums(
    pods: Sequence[Mapping[str, Any]], gang_needed: Mapping[gang.GroupKey, int] | None
) -> dict[gang.GroupKey, int]:
    """Each group of the burst and the members it needs placed (the runtime's count
    when it gives one); empty for a burst without gangs."""
    if not any(gang.group_of(pod) for pod in pods):
        return {}
    minimums = gang.group_minimums(pods)
    if gang_needed:
        minimums.update((k, n) for k, n in gang_needed.items() if k in minimums)
    return minimums


def _take_back_short_gangs(
    state: ClusterState,
    pods: Sequence[Mapping[str, Any]],
    run: _Segments,
    result: PlacementResult,
    minimums: Mapping[gang.GroupKey, int],
) -> None:
    """Take back, from the state and ``result``, every member of a gang that placed fewer
    members than its minimum over the segments; their volumes are unassumed."""
    members: dict[gang.GroupKey, list[int]] = {}
    for i, pod in enumerate(pods):
        key = gang.group_of(pod)
        if key is not None:
            members.setdefault(key, []).append(i)
    for key, indices in members.items():
        placed = [i for i in indices if result.nodes[i] is not None]
        minimum = minimums.get(key, 0)
        if not placed or len(placed) >= minimum:
            continue
        failed = frozenset().union(*(result.rejectors[i] for i in indices))
        reason = coscheduling.gang_reason(str(key), len(placed), minimum)
        for i in placed:
            pod_id = pod_key(pods[i])
            state.remove_pod_key(pod_id)
            if pod_id in run.placed_keys:
                run.placed_keys.remove(pod_id)
            for _, pv in run.bindings.pop(i, ()):
                if pv:
                    state.storage.assumed.pop(pv, None)
            result.tentative[i] = result.nodes[i]
            result.nodes[i] = None
            result.rows[i] = -1
            result.scores[i] = 0
            result.ties[i] = 0
            result.rolled_back[i] = True
            result.rejectors[i] = failed | {coscheduling.NAME}
            result.messages[i] = fit_error_message(result.num_nodes, {}, prefilter_message=reason)
        result.placed = int((result.rows >= 0).sum())


class _Segments:
    """The segments placed so far: their results, and what their Reserve chose."""

    def __init__(
        self,
        place: Callable[..., PlacementResult],
        state: ClusterState,
        profile: Profile,
        workloads: Sequence[Mapping[str, Any]],
        gang_needed: Any,
    ) -> None:
        self._place = place
        self.state = state
        self.profile = profile
        self.workloads = workloads
        self.gang_needed = gang_needed
        self.parts: list[PlacementResult] = []
        self.bindings: dict[int, list[tuple[str, str]]] = {}
        self.assumed_here: list[str] = []
        self.placed_keys: list[str] = []
        self._rows: volume_slots.RowCache = {}
        # Signatures whose runs go pod by pod: with the capacity score on, some node's
        # free volumes for them differ in size.
        self.uncountable: set[volume_slots.Signature] = set()
        args = profile.args_of(names.VOLUME_BINDING)
        self.shape = args.shape if volume_binding.scores_capacity(args) else ()

    def _placed(self, segment: Sequence[Mapping[str, Any]]) -> PlacementResult:
        return self._place(
            self.state,
            segment,
            self.profile,
            commit=True,
            workloads=self.workloads,
            gang_needed=self.gang_needed,
        )

    def plain(
        self, pods: Sequence[Mapping[str, Any]], start: int, end: int, delayed: set[int]
    ) -> None:
        """Pods [start, end), the delayed one among them last, each claim matched by
        VolumeBinding's own Reserve."""
        segment = list(pods[start:end])
        result = self._placed(segment)
        self.parts.append(result)
        storage = self.state.storage
        for offset, node in enumerate(result.nodes):
            if node is None:
                continue
            pod = segment[offset]
            self.placed_keys.append(pod_key(pod))
            if start + offset in delayed:
                meta = pod.get("metadata") or {}
                chosen = volume_binding.reserve(
                    Encoder(self.state, self.profile),
                    int(result.rows[offset]),
                    _Pod(meta.get("namespace") or "default", pod.get("spec") or {}),
                    storage,
                )
                self.bindings[start + offset] = chosen
                self.assumed_here.extend(pv for _, pv in chosen if pv)

    def counted(
        self,
        pods: Sequence[Mapping[str, Any]],
        start: int,
        group: list[int],
        claims: list[volumes.Object],
        signature: volume_slots.Signature,
    ) -> tuple[int | None, int]:
        """Pods [start, group[-1]] as one segment, the free volumes of the alike claims of
        ``group`` counted per node. Returns (None when every pod of the group was placed,
        otherwise the position of the first that was not: the pods from there on are
        taken back, that pod to be placed again alone, for upstream's reasons; the free
        volumes left)."""
        state, storage = self.state, self.state.storage
        end = group[-1] + 1
        nodes = Encoder(state, self.profile)
        free = volume_slots.free_volumes(nodes, claims, storage, self._rows)
        scores = None
        if free is not None and self.shape:
            scores = volume_slots.capacity_scores(self.shape, claims[0], free, state.rows)
            if scores is None:  # the pods of the run would not score alike
                self.uncountable.add(signature)
                free = None
        if free is None:  # not countable after all: the first pod alone, then on
            self.plain(pods, start, group[0] + 1, set(group))
            return group[0] + 1, 1
        column = state.resource_column(volume_slots.COLUMN)
        state.allocatable[:, column] = 0
        state.requested[:, column] = 0
        for row, listed in free.items():
            state.allocatable[row, column] = len(listed)
        members = set(group)
        segment = [
            volume_slots.with_request(pod) if start + k in members else pod
            for k, pod in enumerate(pods[start:end])
        ]
        storage.counted = frozenset(volumes.claim_key(c) for c in claims)
        storage.counted_scores = scores
        try:
            result = self._placed(segment)
        finally:
            storage.counted = frozenset()
            storage.counted_scores = None
        failed = next((i for i in group if result.rows[i - start] < 0), None)
        keep = end - start if failed is None else failed - start
        for offset in range(keep, end - start):  # taken back, placed again later
            if result.rows[offset] >= 0:
                state.remove_pod_key(pod_key(segment[offset]))
        claim_of = dict(zip(group, claims, strict=True))
        for offset in range(keep):
            if result.rows[offset] < 0:
                continue
            key = pod_key(segment[offset])
            self.placed_keys.append(key)
            record = state.pod_record(key)
            if record is not None:
                record.requests.pop(column, None)
            claim = claim_of.get(start + offset)
            if claim is not None:
                pv = free[int(result.rows[offset])].pop(0)
                name, claim_key = pv["metadata"]["name"], volumes.claim_key(claim)
                storage.assumed[name] = claim_key
                self.assumed_here.append(name)
                self.bindings[start + offset] = [(claim_key, name)]
        state.allocatable[:, column] = 0
        state.requested[:, column] = 0
        self.parts.append(head(result, keep) if keep < end - start else result)
        return failed, sum(len(listed) for listed in free.values())
