"""The binding cycle: placed pods handed to the binder, and how each bind settles.

As kube-scheduler's binding cycle: the burst assumed each placement in the cache before
handing it here; a bind that lands confirms the assumption (Scheduled event, metrics,
the queue is done with the pod), one made moot (pod gone, recreated, bound by someone
else) forgets it, and one refused forgets it and reports the failure (``report``) so the
pod is backed off as an error. The binder calls back on the event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from kubesalvo.sched import metrics as m
from kubesalvo.sched.binder import Binder, BinderSettings, BindOutcome, BindResult
from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.cycle.report import ref, report_failure
from kubesalvo.sched.events import EventRecorder
from kubesalvo.sched.queue import QueuedPod, SchedulingQueue

__all__ = ["BindingCycle", "BindingInFlight"]


@dataclass
class BindingInFlight:
    qp: QueuedPod
    profile: str
    node: str
    started: float  # when its burst began (perf_counter), for the attempt's duration


class BindingCycle:
    """The binds in flight, by pod UID, and the binder's callbacks."""

    def __init__(
        self,
        client: ApiClient,
        settings: BinderSettings | None,
        cache: SchedulerCache,
        queue: SchedulingQueue,
        recorder: EventRecorder | None,
        metrics: m.SchedulerMetrics | None,
        is_leader: Callable[[], bool],
    ) -> None:
        self.cache = cache
        self.queue = queue
        self.recorder = recorder
        self.metrics = metrics
        self.is_leader = is_leader
        self.binder = Binder(
            client,
            settings,
            on_bound=self._bound,
            on_forget=self._forgotten,
            on_failed=self._failed,
            is_leader=is_leader,
            metrics=metrics,
        )
        self._in_flight: dict[str, BindingInFlight] = {}
        # The preBind and postBind points of kubesalvo's plugins (QosAware's table):
        # told (namespace, name) when a bind is sent, and when it ends (bound or not).
        self.on_bind_started: Callable[[str, str], None] | None = None
        self.on_bind_ended: Callable[[str, str, bool], None] | None = None

    def __contains__(self, uid: str) -> bool:
        return uid in self._in_flight

    def bind(self, qp: QueuedPod, profile: str, node: str, started: float) -> None:
        """Start binding a pod the burst placed (and the cache assumed) on ``node``."""
        self._in_flight[qp.key] = BindingInFlight(qp, profile, node, started)
        meta = qp.pod.metadata
        if self.on_bind_started is not None:
            self.on_bind_started(meta.namespace, meta.name)
        self.binder.bind(meta.namespace, meta.name, meta.uid, node)

    def cancel_all(self) -> None:
        """Cancel every bind in flight; each comes back as FAILED and is requeued."""
        task = asyncio.get_running_loop().create_task(self.binder.cancel_all())
        task.add_done_callback(lambda _: None)

    # --- how binds settle (binder callbacks, on the event loop) -----------------------

    def _settled(self, result: BindResult) -> BindingInFlight | None:
        binding = self._in_flight.pop(result.uid, None)
        if binding is not None and self.on_bind_ended is not None:
            meta = binding.qp.pod.metadata
            self.on_bind_ended(meta.namespace, meta.name, result.outcome is BindOutcome.BOUND)
        return binding

    def _bound(self, result: BindResult) -> None:
        binding = self._settled(result)
        self.cache.finish_binding(result.uid)
        if binding is None:
            return
        qp = binding.qp
        self.queue.done(qp.key)
        if self.recorder is not None:
            self.recorder.scheduled(ref(qp), result.node)
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
        report_failure(
            self.queue,
            self.recorder,
            self.metrics,
            binding.qp,
            binding.profile,
            f"Binding rejected: {result.error}",
            time.perf_counter() - binding.started,
            error=True,
            record=self.is_leader(),
        )
