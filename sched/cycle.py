"""The burst cycle: pending pods -> one kernel call per profile -> assumed -> binds in flight.

One task runs the loop. When the queue has ready pods it waits a short gathering window
(``burstGatheringWindow``) so that pods created together land in one burst, pops every ready
pod (at most ``maxBurstPods`` per profile), and per profile runs ``place_burst`` in a worker
thread (``asyncio.to_thread``; the kernel releases the GIL), so the event loop keeps reading
watches and sending the binds of earlier bursts meanwhile. The cache is frozen while the
kernel runs (see ``cache``); the placements are committed into the state by the kernel
and recorded as assumed before any other change is applied. Each placed pod's bind is
handed to the binder at once and the loop goes on to the next burst without waiting.

How each pod's attempt ends:

* placed and bound: ``Scheduled`` event, the queue is done with it, the cache waits for
  the watch to confirm it;
* placed, bind moot (pod gone, recreated or bound by someone else): forgotten;
* placed, bind failed: forgotten, ``FailedScheduling`` with the error, requeued with the
  error backoff; a replica that lost its lease requeues silently (the leader owns events);
* not placed: ``FailedScheduling`` event and PodScheduled=False (reason Unschedulable)
  with kube-scheduler's text, parked in the queue with the plugins that rejected it.

Binds are only started while ``is_leader()`` holds; losing the lease cancels the binds in
flight (:meth:`stop_binding`). Metrics follow kube-scheduler's names.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core.place import PlacementResult, place_burst
from kubesalvo.sched import metrics as m
from kubesalvo.sched.binder import Binder, BinderSettings, BindResult
from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.config import SchedulerConfig
from kubesalvo.sched.events import SCHEDULER_ERROR, UNSCHEDULABLE, EventRecorder, ObjectRef
from kubesalvo.sched.informers import to_api_dict
from kubesalvo.sched.queue import QueuedPod, QueueName, SchedulingQueue, rejecting_plugins

__all__ = ["Attempt", "BurstCycle", "CycleSettings"]

log = logging.getLogger(__name__)


@dataclass
class CycleSettings:
    max_burst_pods: int = 1000
    gathering_window: float = 0.01
    # How often, at the latest, the loop wakes to expire assumptions and update gauges.
    housekeeping_period: float = 1.0
    remembered_attempts: int = 50_000

    @classmethod
    def from_config(cls, config: SchedulerConfig) -> CycleSettings:
        return cls(
            max_burst_pods=config.kubesalvo.max_burst_pods,
            gathering_window=config.kubesalvo.burst_gathering_window_seconds,
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
    at: float = field(default_factory=time.time)


@dataclass
class _Binding:
    qp: QueuedPod
    profile: str
    node: str
    started: float


def _ref(qp: QueuedPod) -> ObjectRef:
    meta = qp.pod.metadata
    return ObjectRef(meta.namespace, meta.name, meta.uid)


def _pod_scheduled_status(qp: QueuedPod) -> str | None:
    for condition in qp.pod.status.conditions:
        if condition.type == "PodScheduled":
            return str(condition.status)
    return None


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
    ) -> None:
        self.config = config
        self.cache = cache
        self.queue = queue
        self.recorder = recorder
        self.metrics = metrics
        self.is_leader = is_leader
        self.settings = settings or CycleSettings.from_config(config)
        self.binder = Binder(
            client,
            binder_settings,
            on_bound=self._bound,
            on_forget=self._forgotten,
            on_failed=self._failed,
            is_leader=is_leader,
            metrics=metrics,
        )
        self._wakeup = asyncio.Event()
        self._leading = asyncio.Event()
        self._binding: dict[str, _Binding] = {}
        self.attempts: collections.OrderedDict[str, Attempt] = collections.OrderedDict()
        self.bursts = 0
        self.kernel_seconds = 0.0
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        queue.on_active = self._wakeup.set
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

    def stop_binding(self) -> None:
        """Cancel every bind in flight; each comes back as FAILED and is requeued."""
        task = asyncio.get_running_loop().create_task(self.binder.cancel_all())
        task.add_done_callback(lambda _: None)

    async def stop(self, drain_timeout: float = 30.0) -> None:
        """Start no new burst, let the binds in flight finish (SIGTERM), then return."""
        self._stopping = True
        self._wakeup.set()
        self._leading.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.binder.drain(drain_timeout)

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
            if self.settings.gathering_window > 0:
                await asyncio.sleep(self.settings.gathering_window)
            profiles = max(1, len(self.config.profiles))
            burst = self.queue.pop_burst(self.settings.max_burst_pods * profiles)
            if burst:
                try:
                    await self.schedule(burst)
                except Exception:
                    log.exception("burst of %d pods failed", len(burst))
                    self.cache.drop_unrecorded([qp.key for qp in burst])
                    for qp in burst:
                        in_flight = self.queue.where(qp.key) is QueueName.IN_FLIGHT
                        if in_flight and qp.key not in self._binding:
                            self.queue.add_unschedulable(qp)

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
        if self.metrics is not None:
            for queue, count in self.queue.pending_counts().items():
                self.metrics.pending_pods.labels(queue=queue).set(count)

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
            for start in range(0, len(pods), limit):
                await self._place(name, profile.core, pods[start : start + limit])

    async def _place(self, profile_name: str, profile: Any, pods: list[QueuedPod]) -> None:
        objects = [to_api_dict(qp.pod) for qp in pods]
        began = time.perf_counter()
        with self.cache.frozen() as state:
            result: PlacementResult = await asyncio.to_thread(place_burst, state, objects, profile)
            # Recorded before the deferred watch changes are applied on leaving the block,
            # so a confirmation among them finds its assumption.
            for qp, node in zip(pods, result.nodes, strict=True):
                if node is not None:
                    self.cache.assumed(qp.key, node)
        self.bursts += 1
        self.kernel_seconds += result.kernel_seconds
        if self.metrics is not None:
            self.metrics.observe_burst(len(pods), result.kernel_seconds)
        log.debug(
            "burst: %d pods, %d placed, %d classes, kernel %.4fs, encode %.4fs",
            len(pods),
            result.placed,
            result.classes,
            result.kernel_seconds,
            result.encode_seconds,
        )
        elapsed = time.perf_counter() - began
        for i, qp in enumerate(pods):
            node = result.nodes[i]
            self._remember(qp, profile_name, result, i, len(pods))
            if node is not None:
                self._binding[qp.key] = _Binding(qp, profile_name, node, began)
                meta = qp.pod.metadata
                self.binder.bind(meta.namespace, meta.name, meta.uid, node)
            else:
                self._unschedulable(qp, profile_name, result, i, elapsed)

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
        )
        self.attempts.pop(qp.name, None)
        self.attempts[qp.name] = attempt
        while len(self.attempts) > self.settings.remembered_attempts:
            self.attempts.popitem(last=False)

    def _unschedulable(
        self, qp: QueuedPod, profile: str, result: PlacementResult, i: int, elapsed: float
    ) -> None:
        message = result.messages[i]
        reasons: Mapping[str, int] = result.reason_counts[i]
        plugins = rejecting_plugins(reasons)
        if self.recorder is not None:
            self.recorder.failed_scheduling(_ref(qp), message)
            self.recorder.pod_condition(
                _ref(qp), UNSCHEDULABLE, message, current_status=_pod_scheduled_status(qp)
            )
        if self.metrics is not None:
            self.metrics.observe_attempt(m.UNSCHEDULABLE, profile, elapsed)
        self.queue.add_unschedulable(qp, plugins)

    # --- how binds settle (binder callbacks, on the event loop) -----------------------

    def _settled(self, result: BindResult) -> _Binding | None:
        return self._binding.pop(result.uid, None)

    def _bound(self, result: BindResult) -> None:
        binding = self._settled(result)
        self.cache.finish_binding(result.uid)
        if binding is None:
            return
        qp = binding.qp
        self.queue.done(qp.key)
        if self.recorder is not None:
            self.recorder.scheduled(_ref(qp), result.node)
        if self.metrics is not None:
            self.metrics.observe_attempt(
                m.SCHEDULED, binding.profile, time.perf_counter() - binding.started
            )
            first = qp.initial_attempt_timestamp
            if first is not None:
                self.metrics.observe_scheduled_pod(qp.attempts, self.queue.clock.now() - first)

    def _forgotten(self, result: BindResult) -> None:
        binding = self._settled(result)
        self.cache.forget(result.uid)
        if binding is not None:
            self.queue.done(binding.qp.key)

    def _failed(self, result: BindResult) -> None:
        binding = self._settled(result)
        self.cache.forget(result.uid)
        if binding is None:
            return
        qp = binding.qp
        if self.is_leader() and self.recorder is not None:
            message = f"Binding rejected: {result.error}"
            self.recorder.failed_scheduling(_ref(qp), message)
            self.recorder.pod_condition(
                _ref(qp), SCHEDULER_ERROR, message, current_status=_pod_scheduled_status(qp)
            )
        if self.metrics is not None:
            self.metrics.observe_attempt(
                m.ERROR, binding.profile, time.perf_counter() - binding.started
            )
        self.queue.add_unschedulable(qp)
