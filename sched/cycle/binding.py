"""The binding cycle: placed pods handed to the binder, and how each bind settles.

As kube-scheduler's binding cycle: the burst assumed each placement in the cache before
handing it here; a bind that lands confirms the assumption (Scheduled event, metrics,
the queue is done with the pod), one made moot (pod gone, recreated, bound by someone
else) forgets it, and one refused forgets it and reports the failure (``report``) so the
pod is backed off as an error. The binder calls back on the event loop.

Plugins that write before the bind (VolumeBinding, DynamicResources) take part through
``add_pre_bind`` (sched/cycle/prebind.py): a pod that one of them wants is bound only once
its PreBind succeeded; a failed PreBind reports upstream's text, and every plugin that
wanted a pod whose bind did not end BOUND is told to unreserve it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kubesalvo.sched import metrics as m
from kubesalvo.sched.binder import Binder, BinderSettings, BindOutcome, BindResult
from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.cycle.prebind import PreBindError, PreBindPlugin
from kubesalvo.sched.cycle.report import ref, report_failure
from kubesalvo.sched.events import EventRecorder
from kubesalvo.sched.queue import QueuedPod, SchedulingQueue

__all__ = ["BindingCycle", "BindingInFlight"]

log = logging.getLogger(__name__)


@dataclass
class BindingInFlight:
    qp: QueuedPod
    profile: str
    node: str
    started: float  # when its burst began (perf_counter), for the attempt's duration
    pre_bind: list[PreBindPlugin] = field(default_factory=list)  # the plugins that want it


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
        self._pre_bind: list[PreBindPlugin] = []

    def __contains__(self, uid: str) -> bool:
        return uid in self._in_flight

    def add_pre_bind(self, plugin: PreBindPlugin) -> None:
        """Run ``plugin``'s PreBind before binding each pod it wants (in the order added)."""
        self._pre_bind.append(plugin)

    def bind(self, qp: QueuedPod, profile: str, node: str, started: float) -> None:
        """Start binding a pod the burst placed (and the cache assumed) on ``node``."""
        wanted = [p for p in self._pre_bind if p.wants(qp, node)] if self._pre_bind else []
        self._in_flight[qp.key] = BindingInFlight(qp, profile, node, started, wanted)
        meta = qp.pod.metadata
        if self.on_bind_started is not None:
            self.on_bind_started(meta.namespace, meta.name)
        prepare = None
        if wanted:

            async def prepare() -> None:
                for plugin in wanted:
                    began = time.perf_counter()
                    try:
                        await plugin.pre_bind(qp, node)
                    except Exception as error:
                        failure = PreBindError(plugin.name, error)
                        status = "Unschedulable" if failure.rejected else "Error"
                        self._observe_plugin(plugin.name, status, began)
                        raise failure from error
                    self._observe_plugin(plugin.name, "Success", began)

        self.binder.bind(meta.namespace, meta.name, meta.uid, node, prepare)

    def _observe_plugin(self, plugin: str, status: str, began: float) -> None:
        if self.metrics is not None:
            elapsed = time.perf_counter() - began
            self.metrics.observe_plugin(plugin, "PreBind", status, elapsed)

    def cancel_all(self) -> None:
        """Cancel every bind in flight; each comes back as FAILED and is requeued."""
        task = asyncio.get_running_loop().create_task(self.binder.cancel_all())
        task.add_done_callback(lambda _: None)

    # --- how binds settle (binder callbacks, on the event loop) -----------------------

    def _settled(self, result: BindResult) -> BindingInFlight | None:
        binding = self._in_flight.pop(result.uid, None)
        if binding is None:
            return None
        bound = result.outcome is BindOutcome.BOUND
        if not bound:
            for plugin in reversed(binding.pre_bind):
                try:
                    plugin.unreserve(binding.qp, binding.node)
                except Exception:
                    log.exception("%s: unreserve of %s failed", plugin.name, result.name)
        if self.on_bind_ended is not None:
            meta = binding.qp.pod.metadata
            self.on_bind_ended(meta.namespace, meta.name, bound)
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
            now = time.perf_counter()
            self.metrics.observe_attempt(m.SCHEDULED, binding.profile, now - binding.started)
            first = qp.initial_attempt_timestamp
            if result.answered and first is not None:
                # The queue's clock is not perf_counter: the POST's moment is found back
                # through the time passed since.
                posted = self.queue.clock.now() - (now - result.sent)
                self.metrics.observe_bind_post(
                    binding.profile, result.answered - result.sent, max(0.0, posted - first)
                )
            if result.answered and result.handed:
                self.metrics.observe_stage(m.STAGE_BIND_WAIT, max(0.0, result.sent - result.handed))
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
        error = result.error
        pre_bind = error if isinstance(error, PreBindError) else None
        if self.metrics is not None and pre_bind is None and result.answered:
            # The binding POST was answered with an error: DefaultBinder's Error status.
            seconds = result.answered - result.sent
            self.metrics.observe_plugin("DefaultBinder", "Bind", "Error", seconds)
        # A PreBind rejection parks the pod as unschedulable by that plugin; an error of a
        # PreBind or of the binding POST backs it off.
        rejecting = (pre_bind.plugin,) if pre_bind is not None and pre_bind.rejected else ()
        report_failure(
            self.queue,
            self.recorder,
            self.metrics,
            binding.qp,
            binding.profile,
            str(pre_bind) if pre_bind is not None else f"Binding rejected: {error}",
            time.perf_counter() - binding.started,
            error=not rejecting,
            plugins=rejecting,
            record=self.is_leader(),
        )
