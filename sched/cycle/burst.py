"""BurstCycle: the loop that gathers bursts, places them and hands the binds over (see the
package docstring for how each pod's attempt ends)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core.dra import slots
from kubesalvo.core.dra.pod import PodDevices
from kubesalvo.core.dra.slots import CountedRun
from kubesalvo.core.place import PlacementResult, place_burst
from kubesalvo.core.plugins import (
    coscheduling,
    default_preemption,
    framework,
    names,
    post_filter,
)
from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.plugins.dynamic_resources import DynamicResourcesArgs
from kubesalvo.core.preemption import (
    PreemptionArgs,
    PreemptionDecision,
)
from kubesalvo.core.reservations import Reservation, place_reserving, segments
from kubesalvo.core.ties import TieBreak
from kubesalvo.sched import metrics as m
from kubesalvo.sched.binder import BinderSettings
from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.config import SchedulerConfig
from kubesalvo.sched.cycle.binding import BindingCycle
from kubesalvo.sched.cycle.gathering import Gathering
from kubesalvo.sched.cycle.post_filter import (
    ClusterObjects,
    PreemptionJob,
    decide,
    ends_before_preemption,
    no_dynamic_resources_state,
)
from kubesalvo.sched.cycle.report import (
    report_failure,
    with_postfilter,
)
from kubesalvo.sched.devices import DeviceBook
from kubesalvo.sched.events import EventRecorder
from kubesalvo.sched.gangs import GangBook
from kubesalvo.sched.informers.forms import PodForms, with_nomination
from kubesalvo.sched.preemption import PreemptionOutcome, execute
from kubesalvo.sched.queue import QueuedPod, QueueName, SchedulingQueue

__all__ = [
    "Attempt",
    "BurstCycle",
    "ClusterObjects",
    "CycleSettings",
]

log = logging.getLogger(__name__)


@dataclass
class CycleSettings:
    max_burst_pods: int = 1000
    gathering_window: float = 0.01
    # How often, at the latest, the loop wakes to expire assumptions and update gauges.
    housekeeping_period: float = 1.0
    remembered_attempts: int = 50_000
    # Recent bursts kept for the web view (each a few numbers).
    remembered_bursts: int = 100
    # The seed of the stream ties between equally scored nodes are drawn from (None: from
    # the clock at start, as kube-scheduler's random choice differs run to run).
    tie_seed: int | None = None
    # A plain burst (no reservations, no devices) whose pods times the cluster's nodes are
    # at most this is placed on the event loop itself (1-2 ms: up to 8 pods at 5,000
    # nodes): the worker thread's hand-off (waking the thread, the future's callbacks, the
    # GIL traded back) cost such a burst 0.1-0.5 ms of CPU more in-process
    # (bench/steady_bursts.py --hand-off), while the loop waits for it anyway.
    # 0: always the worker thread.
    inline_pod_nodes: int = 40_000

    @classmethod
    def from_config(cls, config: SchedulerConfig, tie_seed: int | None = None) -> CycleSettings:
        return cls(
            max_burst_pods=config.kubesalvo.max_burst_pods,
            gathering_window=config.kubesalvo.burst_gathering_window_seconds,
            tie_seed=tie_seed,
        )


@dataclass
class Attempt:
    """The last scheduling attempt of a pod, for ``/debug/explain``."""

    pod: str  # namespace/name
    uid: str
    profile: str
    node: str | None
    message: str
    reason_counts: dict[str, int] = field(default_factory=dict)
    score: int = 0
    burst_size: int = 0
    ties: int = 0  # nodes that shared the best total score, the node drawn among them
    at: float = field(default_factory=time.time)
    # What DefaultPreemption last decided for it, when it ran (for the web view's pod page).
    preemption: dict[str, Any] | None = None
    # BurstPacking decided otherwise than the kernel alone: the node the kernel chose
    # (None: it left the pod out); ``packed`` False when BurstPacking did not move it.
    packed: bool = False
    kernel_node: str | None = None


@dataclass
class BurstRecord:
    """One placed burst, for the web view's list of recent bursts."""

    at: float  # wall clock, when it was placed
    profile: str
    pods: int
    placed: int  # binds started
    unplaced: int  # pods that fit nowhere, or whose gang or a plugin failed them
    kernel_seconds: float


class BurstCycle:
    """Schedules the queue's pods in bursts and binds them; see the module docstring."""

    def __init__(
        self,
        config: SchedulerConfig,
        cache: SchedulerCache,
        queue: SchedulingQueue,
        client: ApiClient,
        *,
        recorder: EventRecorder | None = None,
        metrics: m.SchedulerMetrics | None = None,
        is_leader: Callable[[], bool] = lambda: True,
        settings: CycleSettings | None = None,
        binder_settings: BinderSettings | None = None,
        cluster: Callable[[], ClusterObjects] | None = None,
        workloads: Callable[[set[str]], Sequence[Mapping[str, Any]]] | None = None,
        gangs: GangBook | None = None,
        devices: DeviceBook | None = None,
        forms: PodForms | None = None,
    ) -> None:
        self.config = config
        # DynamicResources' reservations and PreBind, when a profile filters with it (its
        # runtime half, sched/devices.py, feeds it the informers' objects); None: pods
        # with claims stay pending.
        if devices is None and any(
            names.DYNAMIC_RESOURCES in p.plugins.at("filter") for p in config.profiles
        ):
            devices = DeviceBook(client)
        self.devices = devices
        # Coscheduling's runtime half: which gangs of a burst may be tried at all.
        self.gangs = gangs or GangBook(queue, cache.is_assumed)
        # The Services, ReplicationControllers, ReplicaSets and StatefulSets of the given
        # namespaces, whose selectors give pods without spread constraints the default
        # ones (PodTopologySpread's defaulting); None: no default spreading.
        self.workloads = workloads
        self.client = client
        # Without a view of the cluster's objects there is no preemption.
        self.cluster = cluster
        self.cache = cache
        self.queue = queue
        self.recorder = recorder
        self.metrics = metrics
        self.is_leader = is_leader
        self.settings = settings or CycleSettings.from_config(config)
        seed = self.settings.tie_seed
        if seed is None:
            seed = time.time_ns() & ((1 << 63) - 1)
        # One stream for every burst of the run; its seed is logged to replay a run.
        self.ties = TieBreak(seed)
        log.info("ties between equally scored nodes drawn with seed %d", seed)
        self.binding = BindingCycle(
            client, binder_settings, cache, queue, recorder, metrics, is_leader
        )
        self.binder = self.binding.binder
        if devices is not None:
            self.binding.add_pre_bind(devices)
        self._wakeup = asyncio.Event()
        self._leading = asyncio.Event()
        self.attempts: collections.OrderedDict[str, Attempt] = collections.OrderedDict()
        self.bursts = 0
        self.kernel_seconds = 0.0
        self.recent_bursts: collections.deque[BurstRecord] = collections.deque(
            maxlen=self.settings.remembered_bursts
        )
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        # Preemption runs off the burst path, one job at a time in burst order; the pods
        # of queued and running jobs stay in flight (never popped again) until reported.
        self._preemptions: collections.deque[PreemptionJob] = collections.deque()
        self._preemption_ready = asyncio.Event()
        self._preemption_task: asyncio.Task[None] | None = None
        self._preempting: set[str] = set()
        # How long to wait for company once work is found (sched/cycle/gathering.py).
        self.gathering = Gathering.for_window(self.settings.gathering_window)
        # The pods' API dicts, one per object version, shared with the rest of the
        # runtime (sched/informers/forms.py: the app's memo, kept by the pod informer).
        # A cycle run without informers keeps its own, pruned to the queue's pods.
        self._own_forms = forms is None
        self.forms = forms or PodForms()
        self._forms_pruned = time.monotonic()
        self._pending_gauges: dict[str, Any] = {}  # scheduler_pending_pods' children
        queue.on_active = self._arrived
        if is_leader():
            self._leading.set()

    # --- lifecycle --------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name="burst-cycle")
        return self._task

    def leadership_changed(self, leading: bool) -> None:
        """Start bursts when we lead; when we stop leading, stop binding at once."""
        if leading:
            self._leading.set()
            self._wakeup.set()
        else:
            self._leading.clear()
            self.stop_binding()
            # The new leader decides again; the job running now writes nothing more.
            self._drop_preemptions()

    def stop_binding(self) -> None:
        """Cancel every bind in flight; each comes back as FAILED and is requeued."""
        self.binding.cancel_all()

    async def stop(self, drain_timeout: float = 30.0) -> None:
        """Start no new burst, let the binds in flight finish (SIGTERM), then return."""
        self._stopping = True
        self._wakeup.set()
        self._leading.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._stop_preemption(drain_timeout)
        await self.binder.drain(drain_timeout)

    @property
    def preemptions_pending(self) -> int:
        """Pods whose preemption is queued or running."""
        return len(self._preempting)

    @property
    def binds_in_flight(self) -> int:
        return self.binder.in_flight

    # --- the loop ---------------------------------------------------------------------

    async def run(self) -> None:
        while not self._stopping:
            await self._wait_for_work()
            if self._stopping:
                break
            if not self.is_leader():
                continue
            profiles = max(1, len(self.config.profiles))
            limit = self.settings.max_burst_pods * profiles
            found = time.monotonic()
            while True:
                ready = self.queue.pending_counts()["active"]
                delay = self.gathering.wait(
                    time.monotonic(), found, ready, limit, self.binder.waiting
                )
                if delay <= 0 or self._stopping:
                    break
                await asyncio.sleep(delay)
            burst = self.queue.pop_burst(limit)
            if burst and self.metrics is not None:
                self.metrics.observe_stage(m.STAGE_GATHERING, time.monotonic() - found)
                popped = self.queue.clock.now()
                self.metrics.observe_queue_waits(popped - qp.active_since for qp in burst)
            if burst:
                popped_at = time.perf_counter()
                try:
                    await self.schedule(burst)
                    if self.metrics is not None:
                        self.metrics.observe_stage(m.STAGE_PLACING, time.perf_counter() - popped_at)
                except Exception:
                    log.exception("burst of %d pods failed", len(burst))
                    self.cache.drop_unrecorded([qp.key for qp in burst])
                    for qp in burst:
                        in_flight = self.queue.where(qp.key) is QueueName.IN_FLIGHT
                        pending = qp.key in self.binding or qp.key in self._preempting
                        if in_flight and not pending:
                            self.queue.add_unschedulable(qp)

    def _arrived(self) -> None:
        """The queue has pods ready: note when (for the gathering) and wake the loop."""
        self.gathering.arrived(time.monotonic())
        self._wakeup.set()

    async def _wait_for_work(self) -> None:
        while not self._stopping:
            self._housekeeping()
            if not self._leading.is_set():
                await self._leading.wait()
                continue
            if self.queue.pending_counts()["active"]:
                return
            timeout = self.settings.housekeeping_period
            wake = self.queue.next_wakeup()
            if wake is not None:
                timeout = max(0.0, min(timeout, wake - self.queue.clock.now()))
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout)
            if wake is not None and self.queue.clock.now() >= wake:
                self.queue.flush()

    def _housekeeping(self) -> None:
        self.cache.expire()
        now = time.monotonic()
        if self._own_forms and now - self._forms_pruned >= self.settings.housekeeping_period:
            # Not every pass: this one runs before every burst.
            self._forms_pruned = now
            self.forms.keep_only(self.queue)
        # Waiting gangs past their timeout come back now to be rejected (and back off).
        for _, keys in self.gangs.expired():
            self.queue.activate(keys)
        if self.metrics is not None:
            for queue, count in self.queue.pending_counts().items():
                gauge = self._pending_gauges.get(queue)
                if gauge is None:
                    # labels() checks the value and takes a lock: 5 us against 1 us for
                    # the kept child, four times before every burst.
                    gauge = self._pending_gauges[queue] = self.metrics.pending_pods.labels(
                        queue=queue
                    )
                gauge.set(count)

    async def schedule(self, burst: list[QueuedPod]) -> None:
        """Place one popped burst (every profile in it) and start its binds."""
        by_profile: dict[str, list[QueuedPod]] = {}
        for qp in burst:
            by_profile.setdefault(qp.scheduler_name, []).append(qp)
        limit = self.settings.max_burst_pods
        for name, pods in by_profile.items():
            profile = self.config.profile(name)
            if profile is None:
                # Not ours (the schedulerName changed under us): let it go.
                for qp in pods:
                    self.queue.done(qp.key)
                continue
            preemption = profile.preemption if self.cluster is not None else None
            args = None
            if preemption is not None:
                args = PreemptionArgs(
                    preemption.min_candidate_nodes_percentage,
                    preemption.min_candidate_nodes_absolute,
                )
            claiming: list[QueuedPod] = []
            if self.devices is not None and names.DYNAMIC_RESOURCES in profile.core.filters:
                # A pod with claims is placed alone, after the others (core/dra/pod.py).
                # A gang member is not: placed alone it would escape its gang's minimum,
                # so it stays in the burst, where its claims keep it pending.
                claiming = [
                    qp
                    for qp in pods
                    if qp.pod.spec.resource_claims and gang.group_of(self.forms.api(qp.pod)) is None
                ]
                if claiming:
                    alone = {qp.key for qp in claiming}
                    pods = [qp for qp in pods if qp.key not in alone]
            for start in range(0, len(pods), limit):
                await self._place(name, profile.core, pods[start : start + limit], args)
            await self._place_claiming(name, profile.core, claiming, args)

    async def _place_claiming(
        self, name: str, profile: Any, claiming: list[QueuedPod], args: PreemptionArgs | None
    ) -> None:
        """Pods with claims, in order: runs of pods whose claims ask counts of one class
        in one segment each (core/dra/slots.py), the others alone. A run cut at a pod that
        fits nowhere places that pod alone, for DynamicResources' reasons; the next runs
        start at twice the pods the cut one kept, and grow while they are not cut."""
        rest, limit = claiming, len(claiming)
        while rest:
            kept, cut = (0, False)
            if limit > 1:
                kept, cut = await self._place(name, profile, rest[:limit], args, counted=True)
            rest = rest[kept:]
            if cut:
                limit = max(1, 2 * kept)
            elif kept:
                limit *= 2
                continue
            if rest:
                await self._place(name, profile, rest[:1], args, with_devices=True)
                rest = rest[1:]

    async def _place(
        self,
        profile_name: str,
        profile: Any,
        pods: list[QueuedPod],
        preemption: PreemptionArgs | None = None,
        with_devices: bool = False,
        counted: bool = False,
    ) -> tuple[int, bool]:
        """Place the pods; returns how many of them were dealt with (all, but for a
        ``counted`` run of claiming pods: those it kept) and whether a counted run was
        cut at a pod that fits nowhere (the pod after those kept)."""
        objects = [self.forms.api(qp.pod) for qp in pods]
        if not counted:
            pods, objects, gang_needed = self._admit_gangs(profile_name, pods, objects)
        else:
            gang_needed = {}  # a gang member is never placed with claims (schedule)
        if not pods:
            return 0, False
        nominated = self._nominations(pods, objects)  # objects get their nominations
        workloads: Sequence[Mapping[str, Any]] = ()
        if self.workloads is not None:
            workloads = self.workloads({qp.pod.metadata.namespace for qp in pods})
        began = time.perf_counter()
        with self.cache.frozen() as state:
            reservations = self._reservations(state, nominated)
            result: PlacementResult
            devices: PodDevices | None = None
            run: CountedRun | None = None
            if counted:
                assert self.devices is not None
                found = self.devices.counted_run(objects)
                if found is None:
                    return 0, False
                countable, dra, held = found
                run = await asyncio.to_thread(
                    slots.place_run,
                    place_burst,
                    state,
                    objects[: len(countable)],
                    countable,
                    profile,
                    dra,
                    self.devices.selectors,
                    held,
                    self.ties,
                    workloads,
                )
                if run.result is None:
                    return 0, False
                result = run.result
                pods = pods[: len(result.nodes)]
            elif with_devices and self.devices is not None:
                # Nominated pods' reservations are not kept for a pod with claims.
                devices = self.devices.prefilter(objects[0], self._filter_timeout(profile_name))
                result = await asyncio.to_thread(
                    place_burst,
                    state,
                    objects,
                    profile,
                    workloads=workloads,
                    devices=devices,
                    ties=self.ties,
                )
            elif reservations:
                plan = segments(
                    [qp.priority for qp in pods],
                    reservations,
                    by_priority=self.config.profiles[0].queue_sort == names.PRIORITY_SORT,
                    groups=[gang.group_of(obj) for obj in objects],
                )
                result = await asyncio.to_thread(
                    place_reserving,
                    state,
                    objects,
                    profile,
                    plan,
                    reservations,
                    workloads,
                    gang_needed,
                    self.ties,
                )
            else:
                place = functools.partial(
                    place_burst,
                    state,
                    objects,
                    profile,
                    workloads=workloads,
                    gang_needed=gang_needed,
                    ties=self.ties,
                )
                if len(pods) * state.rows <= self.settings.inline_pod_nodes:
                    result = place()
                else:
                    result = await asyncio.to_thread(place)
            device_failures: dict[str, Mapping[str, str]] = {}
            if devices is not None and preemption is not None:
                device_failures = self._device_failures(state, devices, result)
            # Recorded before the deferred watch changes are applied on leaving the block,
            # so a confirmation among them finds its assumption.
            assuming = time.perf_counter()
            for qp, node in zip(pods, result.nodes, strict=True):
                if node is not None:
                    self.cache.assumed(qp.key, node)
                    if devices is not None and self.devices is not None:
                        self.devices.reserve(qp.pod.metadata.uid, devices, node)
            if run is not None and self.devices is not None:
                for qp, reserved in zip(pods, run.reserved, strict=True):
                    self.devices.keep(qp.pod.metadata.uid, reserved)
            assumed = time.perf_counter() - assuming
        self.bursts += 1
        self.kernel_seconds += result.kernel_seconds
        self.recent_bursts.append(
            BurstRecord(
                time.time(),
                profile_name,
                len(pods),
                result.placed,
                len(pods) - result.placed,
                result.kernel_seconds,
            )
        )
        if self.metrics is not None:
            self.metrics.observe_burst(len(pods), result.kernel_seconds)
            self.metrics.observe_stage(m.STAGE_ENCODE, result.encode_seconds)
            self.metrics.observe_stage(m.STAGE_KERNEL, result.kernel_seconds)
            self.metrics.observe_stage(m.STAGE_ASSUME, assumed)
        log.debug(
            "burst: %d pods, %d placed, %d classes, kernel %.4fs, encode %.4fs",
            len(pods),
            result.placed,
            result.classes,
            result.kernel_seconds,
            result.encode_seconds,
        )
        elapsed = time.perf_counter() - began
        failed: list[int] = []
        for i, qp in enumerate(pods):
            node = result.nodes[i]
            self._remember(qp, profile_name, result, i, len(pods))
            if node is not None:
                self.binding.bind(qp, profile_name, node, began)
            elif result.errors[i]:
                # A plugin failed the attempt (an invalid selector in the pod's spread
                # constraints): no PostFilter runs, the pod is backed off as an error.
                self._error(qp, profile_name, result.errors[i], elapsed)
            elif result.rolled_back[i]:
                # Its gang missed its minimum: no PostFilter plugin answers for it.
                self._unschedulable(qp, profile_name, result, i, elapsed)
            elif devices is not None and preemption is not None and not device_failures:
                # Rejected before any node was filtered (a PreFilter, the allocator's
                # error): preemption cannot help.
                text = self._post_filter_text(
                    profile_name,
                    qp,
                    default_preemption.preemption_message(
                        result.num_nodes,
                        {default_preemption.PREEMPTION_NOT_HELPFUL: result.num_nodes},
                    ),
                    result,
                    i,
                )
                self._unschedulable(qp, profile_name, result, i, elapsed, text)
            elif preemption is not None and not self._ends_before_preemption(
                profile_name, result, i
            ):
                failed.append(i)
            else:
                text = self._post_filter_text(profile_name, qp, None, result, i)
                self._unschedulable(qp, profile_name, result, i, elapsed, text)
        if failed:
            assert preemption is not None
            job = PreemptionJob(
                profile_name, profile, pods, result, failed, preemption, began, device_failures
            )
            self._enqueue_preemption(job)
        return len(pods), run is not None and run.cut

    @staticmethod
    def _device_failures(
        state: Any, devices: PodDevices, result: PlacementResult
    ) -> dict[str, Mapping[str, str]]:
        """For a pod with claims that fit nowhere and may preempt: DynamicResources'
        Filter on every node (the burst stopped at each node's first failing filter, and
        the dry run runs them all), by the pod's uid; empty when there is nothing to
        preempt for (PreFilter rejected it, the attempt failed) or it was placed."""
        if result.nodes[0] is not None or result.prefilter_rejector[0] or result.errors[0]:
            return {}
        if devices.rejection or devices.error:
            return {}
        present = state.present[: state.rows].astype(bool)
        failures = devices.node_failures(state.names, present, state.node_labels.__getitem__)
        if devices.error:  # the allocator failed on a node the burst had not searched
            return {}
        uid = (devices.pod.get("metadata") or {}).get("uid", "")
        return {uid: failures}

    def plugin_parts(self) -> dict[str, Any]:
        """The cycle's own parts of plugins (GangBook, DeviceBook) by their plugin's name,
        which their runtime halves feed through the handle's ``live``."""
        return {part.name: part for part in (self.gangs, self.devices) if part is not None}

    def _admit_gangs(
        self, profile_name: str, pods: list[QueuedPod], objects: list[dict[str, Any]]
    ) -> tuple[list[QueuedPod], list[dict[str, Any]], dict[gang.GroupKey, int]]:
        """Coscheduling's PreFilter: members of gangs that may not be tried (fewer members
        exist than their minimum, or they timed out waiting) are reported and leave the
        burst; returns the rest and how many members each admitted gang needs placed."""
        profile = self.config.profile(profile_name)
        args = profile.args.get(names.COSCHEDULING) if profile is not None else None
        if not isinstance(args, coscheduling.CoschedulingArgs):
            args = coscheduling.CoschedulingArgs()
        admission = self.gangs.admit(pods, objects, args, self._free_room)
        if not admission.refused:
            return pods, objects, admission.needed
        log.debug(
            "gangs: %d pods not tried (%d gangs timed out)",
            len(admission.refused),
            len(admission.timed_out),
        )
        nodes = self.cache.state.node_count
        for i, text in admission.refused.items():
            qp = pods[i]
            message = framework.fit_error_message(nodes, {}, prefilter_message=text)
            self._keep_attempt(
                Attempt(qp.name, qp.key, profile_name, None, message, burst_size=len(pods))
            )
            report_failure(
                self.queue,
                self.recorder,
                self.metrics,
                qp,
                profile_name,
                message,
                0.0,
                error=False,
                plugins=(names.COSCHEDULING,),
                record=self.is_leader(),
            )
        for group in admission.timed_out:
            self.queue.retry_after_backoff(self.queue.gang_members(group))
        kept = [i for i in range(len(pods)) if i not in admission.refused]
        return [pods[i] for i in kept], [objects[i] for i in kept], admission.needed

    def _free_room(self) -> dict[str, int]:
        """The free room of all nodes together, per resource (a PodGroup's minResources)."""
        state = self.cache.state
        rows = state.rows
        free = (state.allocatable[:rows] - state.requested[:rows]).clip(min=0).sum(axis=0)
        return {name: int(free[i]) for i, name in enumerate(state.resource_names)}

    def _nominations(
        self, pods: list[QueuedPod], objects: list[dict[str, Any]]
    ) -> list[tuple[QueuedPod, str]]:
        """The queue's nominated pods outside this burst; the burst's own objects (the
        list's items, replaced in place) get the nomination this process wrote if the
        watch has not shown it yet (place_burst tries a pod's nominated node first): a
        copy for those whose shared dict says otherwise, never a write into it."""
        nominated = self.queue.nominated_pods()
        if not nominated:
            return []
        burst = {qp.key for qp in pods}
        for i, qp in enumerate(pods):
            objects[i] = with_nomination(objects[i], self.queue.nomination(qp))
        return [(qp, node) for qp, node in nominated if qp.key not in burst]

    def _reservations(
        self, state: Any, nominated: list[tuple[QueuedPod, str]]
    ) -> list[Reservation]:
        """The rooms to hold for nominated pods (kube-scheduler's nominated pods seen by
        the filters of pods of lower or equal priority), highest priority first.

        A pod already counted in the state (its bind in flight) holds its room already,
        and a nomination to a node the state does not know holds nothing. kube-scheduler
        adds them for Filter only; here they are assumed for the whole placement, so
        they also weigh in the scores of their node.
        """
        found = [
            Reservation(qp.key, self.forms.api(qp.pod), node, qp.priority)
            for qp, node in nominated
            if node in state.row_of and qp.key not in state.pods
        ]
        found.sort(key=lambda r: -r.priority)
        return found

    # --- preemption, off the burst path ------------------------------------------------

    def _enqueue_preemption(self, job: PreemptionJob) -> None:
        self._preempting.update(job.pods[i].key for i in job.failed)
        self._preemptions.append(job)
        self._preemption_ready.set()
        if self._preemption_task is None or self._preemption_task.done():
            self._preemption_task = asyncio.create_task(self._preemption_loop(), name="preemption")

    async def _preemption_loop(self) -> None:
        while True:
            while not self._preemptions:
                self._preemption_ready.clear()
                await self._preemption_ready.wait()
            job = self._preemptions.popleft()
            try:
                await self._preempt(job)
            except Exception:
                log.exception("preemption for %d pods failed", len(job.failed))
                # Whatever is left of the job is reported as the burst saw it.
                elapsed = time.perf_counter() - job.began
                for i in job.failed:
                    if job.pods[i].key in self._preempting:
                        self._preempting.discard(job.pods[i].key)
                        self._unschedulable(job.pods[i], job.profile_name, job.result, i, elapsed)

    def _drop_preemptions(self) -> None:
        """Forget the queued jobs: their pods go back to the queue silently."""
        while self._preemptions:
            job = self._preemptions.popleft()
            for i in job.failed:
                qp = job.pods[i]
                if qp.key in self._preempting:
                    self._preempting.discard(qp.key)
                    self.queue.add_unschedulable(qp)

    async def _stop_preemption(self, timeout: float) -> None:
        """Shutdown: drop the queued jobs, let the running one finish its writes (so no
        preemption is left half written), cancel it past ``timeout``."""
        self._drop_preemptions()
        task, self._preemption_task = self._preemption_task, None
        if task is None:
            return
        deadline = asyncio.get_running_loop().time() + timeout
        while self._preempting and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self._preempting.clear()

    async def _preempt(self, job: PreemptionJob) -> None:
        """DefaultPreemption for the burst's pods that fit nowhere (module docstring)."""
        assert self.cluster is not None
        pods, result, failed = job.pods, job.result, job.failed
        profile_name = job.profile_name
        if not self.is_leader():
            self._drop_job(job)
            return
        pending = [self._with_nomination(pods[i]) for i in failed]
        try:
            decisions = await asyncio.to_thread(
                decide, self.cluster(), pending, job.profile, job.args, job.device_failures
            )
        except Exception:
            # A decision that cannot be made must not lose the pods: report them as the
            # burst saw them, without a post-filter part.
            log.exception("preemption decisions for %d pods failed", len(failed))
            for i in failed:
                if self._take(pods[i]):
                    elapsed = time.perf_counter() - job.began
                    self._unschedulable(pods[i], profile_name, result, i, elapsed)
            return
        for i, pod, decision in zip(failed, pending, decisions, strict=True):
            qp = pods[i]
            if qp.key not in self._preempting:
                continue  # dropped meanwhile (the lease was lost)
            outcome: PreemptionOutcome | None = None
            if not self.is_leader():
                # The lease was lost meanwhile: write nothing, the new leader decides again.
                self._take(qp)
                self.queue.add_unschedulable(qp)
                continue
            if decision.node is not None or decision.nominated_node_name is not None:
                outcome = await execute(
                    self.client, self.recorder, pod, decision, scheduler_name=profile_name
                )
                self._nominated(qp, decision, outcome)
            if not self._take(qp):
                continue
            self._remember_preemption(qp, decision)
            if self.metrics is not None:
                chosen = decision.node is not None and (outcome is None or not outcome.error)
                self.metrics.observe_preemption(len(decision.victims) if chosen else None)
            if decision.node is not None:
                log.info(
                    "preemption: %s nominated to %s, %d victims",
                    qp.name,
                    decision.node,
                    len(decision.victims),
                )
            text = self._post_filter_text(profile_name, qp, decision.message, result, i)
            elapsed = time.perf_counter() - job.began
            if outcome is not None and outcome.error:
                log.warning("preemption for %s failed: %s", qp.name, outcome.error)
                self._error(qp, profile_name, outcome.error, elapsed)
            else:
                self._unschedulable(qp, profile_name, result, i, elapsed, text)

    def _post_filter_text(
        self,
        profile_name: str,
        qp: QueuedPod,
        preemption: str | None,
        result: PlacementResult,
        i: int,
    ) -> str:
        """What the profile's PostFilter plugins add to the pod's FailedScheduling text
        (``post_filter.post_filter_text``); ``preemption`` is DefaultPreemption's message, None
        when it did not run for the pod."""
        profile = self.config.profile(profile_name)
        if profile is None:
            return preemption or ""
        return post_filter.post_filter_text(
            profile.plugins.at("postFilter"),
            # A pod DynamicResources' PreFilter rejected has no claims in its state.
            has_claims=bool(qp.pod.spec.resource_claims)
            and result.prefilter_rejector[i] != names.DYNAMIC_RESOURCES,
            preemption=preemption,
            dynamic_resources_state=not no_dynamic_resources_state(profile, result, i),
        )

    def _filter_timeout(self, profile_name: str) -> float:
        """DynamicResources' filterTimeout in the profile (its default when not set)."""
        profile = self.config.profile(profile_name)
        args = profile.args.get(names.DYNAMIC_RESOURCES) if profile is not None else None
        if not isinstance(args, DynamicResourcesArgs):
            args = DynamicResourcesArgs()
        return args.filter_timeout_seconds

    def _ends_before_preemption(self, profile_name: str, result: PlacementResult, i: int) -> bool:
        profile = self.config.profile(profile_name)
        return profile is not None and ends_before_preemption(profile, result, i)

    def _with_nomination(self, qp: QueuedPod) -> dict[str, Any]:
        """The pod's API dict with the nomination the queue knows: one this process wrote
        may not be on the watched object yet, and a preemptor that does not know its
        nomination would not wait for its victims and preempt again."""
        return with_nomination(self.forms.api(qp.pod), self.queue.nomination(qp))

    def _take(self, qp: QueuedPod) -> bool:
        """Claim the report of a pod pending preemption (False: someone reported it)."""
        if qp.key not in self._preempting:
            return False
        self._preempting.discard(qp.key)
        return True

    def _drop_job(self, job: PreemptionJob) -> None:
        for i in job.failed:
            if self._take(job.pods[i]):
                self.queue.add_unschedulable(job.pods[i])

    def _nominated(
        self, qp: QueuedPod, decision: PreemptionDecision, outcome: PreemptionOutcome
    ) -> None:
        """Hold what ``execute`` wrote in the queue's nominator at once, as kube-scheduler
        does, so the next burst respects the room before the watch shows the write."""
        if outcome.nominated_node_name is not None:
            self.queue.nominate(qp.key, outcome.nominated_node_name)
        cleared = set(outcome.cleared)
        for other in decision.clear_nominated:
            meta = other.get("metadata") or {}
            if f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}" in cleared:
                uid = meta.get("uid")
                if uid:
                    self.queue.nominate(str(uid), "")

    def _remember(
        self, qp: QueuedPod, profile: str, result: PlacementResult, i: int, size: int
    ) -> None:
        attempt = Attempt(
            pod=qp.name,
            uid=qp.key,
            profile=profile,
            node=result.nodes[i],
            message=result.messages[i],
            reason_counts=dict(result.reason_counts[i]),
            score=int(result.scores[i]),
            burst_size=size,
            ties=result.ties[i],
        )
        if i in result.packing_moved:
            attempt.packed = True
            attempt.kernel_node = result.packing_moved[i]
        # A preemptor placed after its victims left still shows whom it evicted.
        previous = self.attempts.get(qp.name)
        if previous is not None and previous.uid == qp.key:
            attempt.preemption = previous.preemption
        self._keep_attempt(attempt)

    def _remember_preemption(self, qp: QueuedPod, decision: PreemptionDecision) -> None:
        attempt = self.attempts.get(qp.name)
        if attempt is None or attempt.uid != qp.key:
            return
        attempt.preemption = {
            "node": decision.node,
            "victims": [_name_of(victim) for victim in decision.victims],
            "pdbViolations": decision.pdb_violations,
            "nodesTried": decision.nodes_tried,
            "reasons": dict(decision.reason_counts),
            "message": decision.message,
        }

    def forget_attempt(self, pod: str, uid: str) -> None:
        """Pod ``pod`` (namespace/name) of uid ``uid`` was deleted: its last attempt goes
        too (explain answers "unknown" for it; kept, a churn of pods would fill the
        memory of remembered attempts with the dead)."""
        attempt = self.attempts.get(pod)
        if attempt is not None and attempt.uid == uid:
            del self.attempts[pod]

    def _keep_attempt(self, attempt: Attempt) -> None:
        self.attempts.pop(attempt.pod, None)
        self.attempts[attempt.pod] = attempt
        while len(self.attempts) > self.settings.remembered_attempts:
            self.attempts.popitem(last=False)

    def _unschedulable(
        self,
        qp: QueuedPod,
        profile: str,
        result: PlacementResult,
        i: int,
        elapsed: float,
        postfilter_message: str = "",
    ) -> None:
        message = with_postfilter(result.messages[i], postfilter_message)
        attempt = self.attempts.get(qp.name)
        if attempt is not None and attempt.uid == qp.key:
            attempt.message = message
        report_failure(
            self.queue,
            self.recorder,
            self.metrics,
            qp,
            profile,
            message,
            elapsed,
            error=False,
            plugins=result.rejectors[i],
        )

    def _error(self, qp: QueuedPod, profile: str, error: str, elapsed: float) -> None:
        """The attempt failed with an error (a plugin's, or a preemption not written):
        report it as kube-scheduler reports an error status, and back the pod off."""
        report_failure(
            self.queue, self.recorder, self.metrics, qp, profile, error, elapsed, error=True
        )


def _name_of(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
