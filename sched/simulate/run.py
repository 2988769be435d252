"""One simulation: load a cluster into a ClusterState, place its pending burst with the
kernels, and measure what happened.

The burst is ordered as kube-scheduler's PrioritySort would pop it (higher priority first,
then arrival order) and placed by ``place_burst`` with every node considered; each
placement is assumed in the state as the runtime does before binding. Pods held by
scheduling gates never reach a scheduler's active queue, so they stay out of the burst.
The snapshot's workloads (Services, ReplicationControllers, ReplicaSets, StatefulSets)
go to ``place_burst`` as ``kubesalvo run`` passes its informers' ones, so that pods
without spread constraints of their own get the profile's default constraints. Ties
between equally scored nodes are drawn from a stream seeded with ``seed`` (the generated
cluster's), so that one seed gives the same placements run after run.

With DynamicResources in the profile, pods with device claims are placed after the
burst's other pods, as ``kubesalvo run`` places them (``core/dra/claiming.py``: runs of
pods counting devices of one class in one segment, the others alone): against the
snapshot's DeviceClasses, ResourceClaims and ResourceSlices and the devices the run
allocated before each (each placement reserves its devices, so two pods never get one; a
shared claim allocated for one pod is used by the next on its node). A gang member with
claims stays in the burst, where its claims keep it pending, as in the runtime.

Timings: ``seconds`` is the wall time of the placement call (encoding, the kernel and
assuming the placements), ``kernel_seconds`` the compiled part alone, ``cpu_seconds`` the
CPU time of the process over the same call (the encoding worker thread included; on a
busy machine it shows the work done, where wall time also shows the waiting).
"""

from __future__ import annotations

import copy
import os
import resource
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psutil

from kubesalvo.core.dra.allocator import DeviceId, allocated_devices
from kubesalvo.core.dra.claiming import place_claiming
from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.pod import PodDevices, Reserved
from kubesalvo.core.dra.selectors import Selectors
from kubesalvo.core.dra.templates import claims_from_templates
from kubesalvo.core.place import PlacementResult, place_burst
from kubesalvo.core.plugins import coscheduling, names
from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.plugins.dynamic_resources import DynamicResourcesArgs
from kubesalvo.core.profile import Profile
from kubesalvo.core.resources import pod_requests
from kubesalvo.core.results import merged
from kubesalvo.core.snapshot import Snapshot
from kubesalvo.core.state import ClusterState
from kubesalvo.core.ties import TieBreak
from kubesalvo.sched.simulate.source import SimulateError

__all__ = [
    "ReasonCount",
    "ResourceUse",
    "Summary",
    "burst_order",
    "burst_workloads",
    "load_state",
    "placed_snapshot",
    "simulate",
]

# How many distinct FailedScheduling texts a summary keeps (the most frequent ones).
MESSAGES_KEPT = 10


@dataclass(frozen=True)
class ResourceUse:
    """One resource over all nodes: allocatable, and requested before and after the burst."""

    name: str
    allocatable: int  # cpu in millicores, memory and storage in bytes, others in counts
    requested_before: int
    requested_after: int

    @property
    def before(self) -> float:
        return self.requested_before / self.allocatable if self.allocatable else 0.0

    @property
    def after(self) -> float:
        return self.requested_after / self.allocatable if self.allocatable else 0.0


@dataclass(frozen=True)
class ReasonCount:
    """A failure reason over the unplaced pods: how many pods gave it, on how many nodes."""

    reason: str
    pods: int
    nodes: int  # summed over those pods


@dataclass
class Summary:
    source: str
    strategy: str
    nodes: int
    schedulable_nodes: int
    bound_pods: int  # already running before the burst
    pods: int  # the burst
    workloads: int  # those of the burst's namespaces, given to place_burst
    gated_pods: int  # pending but held by schedulingGates: not in the burst
    placed: int
    classes: int
    rolled_back: int  # gang members that fitted but were taken back with their gang
    seconds: float
    kernel_seconds: float
    encode_seconds: float
    cpu_seconds: float
    generate_seconds: float
    load_seconds: float
    state_rss_bytes: int  # growth of the resident set while the state was built
    peak_rss_bytes: int
    nodes_used_before: int
    nodes_used_after: int
    nodes_receiving: int  # distinct nodes the burst went to
    resources: list[ResourceUse]
    reasons: list[ReasonCount]
    messages: list[tuple[str, int]]  # the most frequent FailedScheduling texts, with pods
    # Workload resources the snapshot's recorder could not list ("services", ...).
    omitted_workloads: list[str] = field(default_factory=list)
    load_average: float = field(default_factory=lambda: os.getloadavg()[0])
    # The burst in the order it was placed, and where each pod went (not in the JSON).
    burst: list[dict[str, Any]] = field(default_factory=list, repr=False)
    result: PlacementResult | None = field(default=None, repr=False)
    # The ResourceClaims after the burst (its allocations written), with DynamicResources.
    claims: list[dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def unplaced(self) -> int:
        return self.pods - self.placed

    @property
    def placements_per_second(self) -> float:
        return self.placed / self.seconds if self.seconds > 0 else 0.0

    @property
    def kernel_placements_per_second(self) -> float:
        return self.placed / self.kernel_seconds if self.kernel_seconds > 0 else 0.0

    @property
    def microseconds_per_pod(self) -> float:
        return self.seconds / self.pods * 1e6 if self.pods else 0.0

    @property
    def kernel_microseconds_per_pod(self) -> float:
        return self.kernel_seconds / self.pods * 1e6 if self.pods else 0.0


def _priorities(snapshot: Snapshot) -> dict[str, int]:
    return {
        pc["metadata"]["name"]: int(pc.get("value") or 0)
        for pc in snapshot.priorityclasses
        if isinstance(pc.get("value"), int)
    }


def burst_order(snapshot: Snapshot) -> tuple[list[dict[str, Any]], int]:
    """The pending pods in PrioritySort order, and how many were left out as gated."""
    classes = _priorities(snapshot)
    pending = []
    gated = 0
    for pod in snapshot.pending_pods():
        if (pod.get("spec") or {}).get("schedulingGates"):
            gated += 1
        else:
            pending.append(pod)

    def priority(pod: Mapping[str, Any]) -> int:
        spec = pod.get("spec") or {}
        value = spec.get("priority")
        if isinstance(value, int):
            return value
        return classes.get(spec.get("priorityClassName") or "", 0)

    # sorted() is stable: among equal priorities the snapshot's order (arrival) is kept.
    return sorted(pending, key=lambda pod: -priority(pod)), gated


def burst_workloads(snapshot: Snapshot, burst: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The snapshot's workloads in the burst's namespaces: only those can select its pods
    (as ``kubesalvo run`` hands over only its burst's namespaces' workloads)."""
    if not snapshot.workloads:
        return []
    namespaces = {(pod.get("metadata") or {}).get("namespace") or "default" for pod in burst}
    return [
        w
        for w in snapshot.workloads
        if ((w.get("metadata") or {}).get("namespace") or "default") in namespaces
    ]


# What parsing a malformed object raises (a bad quantity, a list where a map belongs).
_MALFORMED = (ValueError, TypeError, AttributeError, KeyError)


def load_state(snapshot: Snapshot) -> ClusterState:
    """A ClusterState with the snapshot's nodes, namespaces and running pods;
    ``SimulateError`` names the first object that cannot be read."""
    state = ClusterState(max(1, len(snapshot.nodes)))
    for index, node in enumerate(snapshot.nodes):
        try:
            state.add_node(node)
        except _MALFORMED as error:
            raise SimulateError(f"nodes[{index}] ({_name(node)}): {error}") from error
    for namespace in snapshot.namespaces:
        meta = namespace.get("metadata") or {}
        state.set_namespace(meta["name"], meta.get("labels") or {})
    for kind, objects in snapshot.storage.items():
        for obj in objects:
            state.storage.put(kind, obj)
    # The simulation binds what VolumeBinding reserves, in-process: WaitForFirstConsumer
    # claims are matched and provisioned as the scheduler would.
    state.storage.bind_delayed = True
    for index, pod in enumerate(snapshot.pods):
        if not (pod.get("spec") or {}).get("nodeName"):
            continue
        try:
            state.add_pod(pod)
        except _MALFORMED as error:
            raise SimulateError(f"pods[{index}] ({_name(pod)}): {error}") from error
    return state


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def _place(
    state: ClusterState,
    burst: list[dict[str, Any]],
    profile: Profile,
    workloads: list[dict[str, Any]],
    ties: TieBreak,
    devices: PodDevices | None = None,
) -> PlacementResult:
    try:
        return place_burst(state, burst, profile, workloads=workloads, ties=ties, devices=devices)
    except _MALFORMED as error:
        # Name the pod whose requests cannot be read; anything else is not bad input.
        for pod in burst:
            try:
                pod_requests(pod)
            except _MALFORMED as pod_error:
                raise SimulateError(f"pending pod {_name(pod)}: {pod_error}") from error
        raise


def _templated(pod: Mapping[str, Any]) -> bool:
    entries = (pod.get("spec") or {}).get("resourceClaims") or ()
    return any(e.get("resourceClaimTemplateName") for e in entries)


class _Devices:
    """DynamicResources in-process: the snapshot's DRA objects (its claims copied, so the
    snapshot stays as read), and the devices this run's placements took."""

    def __init__(
        self,
        snapshot: Snapshot,
        profile: Profile,
        pending: Sequence[dict[str, Any]] = (),
        seed: int = 0,
    ) -> None:
        devices = snapshot.devices
        classes, slices = devices.get("deviceclasses", []), devices.get("resourceslices", [])
        claims = copy.deepcopy(devices.get("resourceclaims", []))
        # The claims kube-controller-manager would make for the pending pods' templates;
        # the pods whose statuses name them are this run's copies (``burst``), so that the
        # snapshot stays as read.
        self.burst = [
            {**p, "status": dict(p.get("status") or {})} if _templated(p) else p for p in pending
        ]
        claims += claims_from_templates(
            self.burst, devices.get("resourceclaimtemplates", []), claims, seed
        )
        self.objects = DraObjects.of(classes, claims, slices)
        self.held: set[DeviceId] = allocated_devices(self.objects.claims.values())
        self.selectors = Selectors()
        args = profile.args_of(names.DYNAMIC_RESOURCES)
        if not isinstance(args, DynamicResourcesArgs):
            args = DynamicResourcesArgs()
        self.timeout = args.filter_timeout_seconds

    def write(self, pod: Mapping[str, Any], reserved: Reserved) -> None:
        """Write what the pod reserved into the claims as PreBind would: the new
        allocations, and the pod in each claim's ``reservedFor`` (its devices are held
        already: ``place_claiming`` adds them to ``held``)."""
        meta = pod.get("metadata") or {}
        consumer = {"resource": "pods", "name": meta.get("name"), "uid": meta.get("uid")}
        for claim, allocation in reserved.claims:
            status = dict(claim.get("status") or {})
            if allocation is not None:
                status["allocation"] = allocation
            status["reservedFor"] = [*(status.get("reservedFor") or ()), consumer]
            # The copied claim is this run's own: written in place for the next pods.
            claim["status"] = status  # type: ignore[index]


def _place_all(
    state: ClusterState,
    burst: list[dict[str, Any]],
    profile: Profile,
    workloads: list[dict[str, Any]],
    seed: int,
    devices: _Devices | None,
) -> tuple[list[dict[str, Any]], PlacementResult]:
    """The burst in the runtime's order (its pods with claims alone, after the others),
    and the placement of each, in that order."""
    ties = TieBreak(seed)
    claiming = []
    if devices is not None:
        claiming = [
            p for p in burst if (p.get("spec") or {}).get("resourceClaims") and not gang.group_of(p)
        ]
    if not claiming:
        return burst, _place(state, burst, profile, workloads, ties)
    alone = {id(p) for p in claiming}
    others = [p for p in burst if id(p) not in alone]
    results = [_place(state, others, profile, workloads, ties)] if others else []
    assert devices is not None

    def place(
        state: ClusterState,
        pods: Sequence[dict[str, Any]],
        profile: Profile,
        *,
        ties: TieBreak,
        workloads: Sequence[dict[str, Any]] = (),
        devices: PodDevices | None = None,
        commit: bool = True,
    ) -> PlacementResult:
        assert commit  # place_claiming commits every placement, as the runtime does
        return _place(state, list(pods), profile, list(workloads), ties, devices)

    # Runs of pods counting devices of one class in one segment, the others alone
    # (core/dra/claiming.py), each pod's claims written before the next is looked at.
    result, _ = place_claiming(
        place,
        state,
        claiming,
        profile,
        devices.objects,
        devices.selectors,
        devices.held,
        ties,
        workloads,
        timeout=devices.timeout,
        reserved_by=devices.write,
    )
    results.append(result)
    return others + claiming, merged(results)


def _usage(state: ClusterState) -> tuple[np.ndarray, np.ndarray]:
    present = state.present[: state.rows].astype(bool)
    allocatable = state.allocatable[: state.rows][present].sum(axis=0)
    requested = state.requested[: state.rows][present].sum(axis=0)
    return allocatable, requested


def _nodes_used(state: ClusterState) -> int:
    present = state.present[: state.rows].astype(bool)
    pods = state.requested[: state.rows, 3]  # the pods column
    return int(((pods > 0) & present).sum())


def _reasons(result: PlacementResult) -> tuple[list[ReasonCount], list[tuple[str, int]]]:
    pods: Counter[str] = Counter()
    nodes: Counter[str] = Counter()
    messages: Counter[str] = Counter()
    for i, row in enumerate(result.rows):
        if row >= 0:
            continue
        messages[result.messages[i]] += 1
        if result.rolled_back[i]:
            pods[coscheduling.ERR_REASON_GANG_MIN_AVAILABLE] += 1
            continue
        for reason, count in result.reason_counts[i].items():
            pods[reason] += 1
            nodes[reason] += count
    reasons = [ReasonCount(reason, n, nodes[reason]) for reason, n in pods.most_common()]
    return reasons, messages.most_common(MESSAGES_KEPT)


def _rss() -> int:
    return int(psutil.Process().memory_info().rss)


def peak_rss_bytes() -> int:
    # ru_maxrss is in kilobytes on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def simulate(
    snapshot: Snapshot,
    profile: Profile,
    *,
    source: str = "",
    generate_seconds: float = 0.0,
    seed: int = 0,
) -> Summary:
    """Place ``snapshot``'s pending pods on its nodes and summarise the outcome; ties
    between equally scored nodes are drawn from a stream seeded with ``seed``."""
    rss_before = _rss()
    began = time.perf_counter()
    state = load_state(snapshot)
    load_seconds = time.perf_counter() - began
    state_rss = max(0, _rss() - rss_before)
    bound = len(state.pods)
    burst, gated = burst_order(snapshot)
    workloads = burst_workloads(snapshot, burst)
    allocatable, requested_before = _usage(state)
    used_before = _nodes_used(state)

    devices = None
    if names.DYNAMIC_RESOURCES in profile.filters:
        devices = _Devices(snapshot, profile, burst, seed)
        burst = devices.burst
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    burst, result = _place_all(state, burst, profile, workloads, seed, devices)
    seconds = time.perf_counter() - t0
    cpu_seconds = time.process_time() - cpu0

    # The burst may have added resource columns (a resource no node had, a segment's
    # count of free local volumes): the columns before it had none of those.
    allocatable, requested_after = _usage(state)
    requested_before = np.pad(requested_before, (0, len(requested_after) - len(requested_before)))
    # kube-scheduler has no Ready filter (a NotReady node carries a taint instead), so a
    # node is schedulable unless cordoned.
    present = state.present[: state.rows].astype(bool)
    schedulable = present & ~state.unschedulable[: state.rows].astype(bool)
    resources = [
        ResourceUse(name, int(allocatable[i]), int(requested_before[i]), int(requested_after[i]))
        for i, name in enumerate(state.resource_names)
        if allocatable[i] > 0 or requested_after[i] > 0
    ]
    reasons, messages = _reasons(result)
    return Summary(
        source=source or snapshot.source,
        strategy=str(profile.fit.scoring_strategy.type),
        nodes=state.node_count,
        schedulable_nodes=int(schedulable.sum()),
        bound_pods=bound,
        pods=len(burst),
        workloads=len(workloads),
        gated_pods=gated,
        placed=result.placed,
        classes=result.classes,
        rolled_back=int(result.rolled_back.sum()),
        seconds=seconds,
        kernel_seconds=result.kernel_seconds,
        encode_seconds=result.encode_seconds,
        cpu_seconds=cpu_seconds,
        generate_seconds=generate_seconds,
        load_seconds=load_seconds,
        state_rss_bytes=state_rss,
        peak_rss_bytes=peak_rss_bytes(),
        nodes_used_before=used_before,
        nodes_used_after=_nodes_used(state),
        nodes_receiving=len(set(result.rows[result.rows >= 0].tolist())),
        resources=resources,
        reasons=reasons,
        messages=messages,
        burst=burst,
        result=result,
        omitted_workloads=list(snapshot.omitted),
        claims=None if devices is None else [dict(c) for c in devices.objects.claims.values()],
    )


def _key(pod: Mapping[str, Any]) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return meta.get("namespace") or "default", meta.get("name", "")


def placed_snapshot(snapshot: Snapshot, summary: Summary) -> Snapshot:
    """The cluster after the burst: each placed pod carries its node in ``spec.nodeName``."""
    if summary.result is None:
        raise ValueError("the summary carries no placement result")
    # The burst's pods by key: the run's own copies where it wrote a status (the claims
    # made from templates), with the node each got.
    ran = {
        _key(pod): (pod, node)
        for pod, node in zip(summary.burst, summary.result.nodes, strict=True)
    }
    pods = []
    for pod in snapshot.pods:
        pod, node = ran.get(_key(pod), (pod, None))
        if node is not None:
            pod = {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node}}
        pods.append(pod)
    devices = snapshot.devices
    if summary.claims is not None and ("resourceclaims" in devices or summary.claims):
        devices = {**devices, "resourceclaims": summary.claims}
    return Snapshot(
        nodes=snapshot.nodes,
        pods=pods,
        namespaces=snapshot.namespaces,
        priorityclasses=snapshot.priorityclasses,
        workloads=snapshot.workloads,
        omitted=snapshot.omitted,
        storage=snapshot.storage,
        devices=devices,
        source=f"{summary.source}, after simulated placement",
    )
