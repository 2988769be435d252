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
  with kube-scheduler's text, parked in the queue with the plugins that rejected it;
* not placed because a plugin failed the attempt with an error (``PlacementResult.errors``):
  ``FailedScheduling`` with the error and PodScheduled=False (reason SchedulerError), no
  PostFilter, requeued with the error backoff.

Preemption (DefaultPreemption as the profile's postFilter, and a ``cluster`` view given)
runs off the burst path: the burst's pods that fit nowhere (gang members rolled back
excepted) become one job for a background task that takes the jobs one at a time, in
burst order, while the loop goes on with the next bursts; the job's pods stay in flight
in the queue meanwhile, so no burst takes them again before they are reported. Each pod
gets one decision against one picture of the cluster made when the job starts
(``core.preemption``: the informers' pods, assumed ones on their assumed node; each
decision is committed to the picture so that the next pod of the job sees its victims
gone and its nomination). The decisions run in a worker thread; then each is written
(``sched.preemption.execute``: victims marked and deleted, Preempted events,
``nominatedNodeName`` set) and the pod is reported and parked as unschedulable with the
post-filter text appended. The victims' deletions come back through the pod watch, take
their room off the cache and re-activate the pod (ASSIGNED_POD_DELETE); a pod whose
nominated node still has victims terminating is not eligible and just waits. A failed
write backs the pod off as an error. Losing the lease drops the queued jobs (their pods
go back to the queue silently) and the running one writes nothing more; shutdown does
the same and waits (up to the drain timeout) for the running job to finish the writes
it started. The cache is not touched by preemption: the burst's assumptions were
recorded before it starts, and only the watch changes what the state counts.

Nominated pods (kube-scheduler's nominator, kept by the queue): a pending pod nominated
to a node by a preemption holds its room there against pods of lower or equal priority;
pods of higher priority do not see it. Before the kernel runs, the nominated pods the
queue holds outside the burst are assumed on their nodes, the burst is cut where the set
of rooms its pods must respect changes, each segment is placed with its rooms held, and
every room is taken off again before anything else sees the state (pure state logic:
``core.reservations``). A nomination this process writes counts at once, before the
watch shows it.

Binds are only started while ``is_leader()`` holds; losing the lease cancels the binds in
flight (:meth:`stop_binding`). Metrics follow kube-scheduler's names.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesalvo.core import gang
from kubesalvo.core.place import PlacementResult, place_burst
from kubesalvo.core.plugins import names, post_filter
from kubesalvo.core.preemption import (
    NOT_ELIGIBLE_NEVER,
    PREEMPTION_PREFIX,
    PreemptionArgs,
    PreemptionDecision,
    Preemptor,
)
from kubesalvo.core.profile import Profile
from kubesalvo.core.reservations import Reservation, place_reserving, segments
from kubesalvo.sched import metrics as m
from kubesalvo.sched.binder import Binder, BinderSettings, BindResult
from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.config import SchedulerConfig
from kubesalvo.sched.events import SCHEDULER_ERROR, UNSCHEDULABLE, EventRecorder, ObjectRef
from kubesalvo.sched.informers import to_api_dict
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
class ClusterObjects:
    """What a preemption decision reads, as taken from the informers on the event loop.

    The objects are the informers' decoded Structs (turned into API dicts in the worker
    thread, off the event loop); ``assumed`` maps the UID of each pod the cache holds as
    assumed to its node, so the picture counts binds still in flight.
    """

    nodes: list[Any]
    pods: list[Any]
    pdbs: list[Any] = field(default_factory=list)
    namespaces: list[Any] = field(default_factory=list)
    assumed: dict[str, str] = field(default_factory=dict)


def _preemptor(
    objects: ClusterObjects,
    pending: list[dict[str, Any]],
    profile: Profile,
    args: PreemptionArgs,
) -> Preemptor:
    """The picture for one burst's decisions; ``pending`` (the burst's unplaced pods, as
    API dicts) replace their informer copies so that commits find them by identity."""
    keys = {(p.get("metadata") or {}).get("uid") for p in pending}
    pods: list[dict[str, Any]] = []
    for obj in objects.pods:
        uid = obj.metadata.uid
        if uid in keys:
            continue
        pod = to_api_dict(obj)
        node = objects.assumed.get(uid)
        if node is not None and not obj.spec.node_name:
            pod.setdefault("spec", {})["nodeName"] = node
        pods.append(pod)
    pods.extend(pending)
    return Preemptor(
        [to_api_dict(n) for n in objects.nodes],
        pods,
        [to_api_dict(b) for b in objects.pdbs],
        profile,
        namespaces=[to_api_dict(ns) for ns in objects.namespaces],
        args=args,
    )


def _decide(
    objects: ClusterObjects,
    pending: list[dict[str, Any]],
    profile: Profile,
    args: PreemptionArgs,
) -> list[PreemptionDecision]:
    """One decision per pod, in the burst's order, each committed for the next.

    A decision that found no node leaves the picture as it was, so until a decision does
    pick a node, a pod identical to one already decided (same namespace, labels, spec and
    nomination: replicas of one template) gets a copy of its answer instead of another
    pass over every node. A burst of thousands of pods that fit nowhere and can evict
    nothing costs one decision per template, not one per pod.
    """
    preemptor: Preemptor | None = None
    decisions = []
    answered: dict[bytes, PreemptionDecision] = {}
    for pod in pending:
        if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
            # Upstream's first eligibility check; answered without building the picture.
            decisions.append(
                PreemptionDecision(None, message=PREEMPTION_PREFIX + NOT_ELIGIBLE_NEVER)
            )
            continue
        key = _template_key(pod)
        known = answered.get(key)
        if known is not None:
            decisions.append(dataclasses.replace(known, reason_counts=dict(known.reason_counts)))
            continue
        if preemptor is None:
            preemptor = _preemptor(objects, pending, profile, args)
        decision = preemptor.preempt(pod)
        preemptor.commit(pod, decision)
        decisions.append(decision)
        if decision.node is None:
            answered[key] = decision
        else:
            answered.clear()
    return decisions


def _template_key(pod: Mapping[str, Any]) -> bytes:
    """What a decision about ``pod`` depends on, of the pod itself (not its name or UID)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    return msgspec.json.encode(
        [
            meta.get("namespace") or "",
            meta.get("labels") or {},
            pod.get("spec") or {},
            status.get("nominatedNodeName") or "",
        ],
        order="sorted",
    )


@dataclass
class _PreemptionJob:
    """A burst's pods that fit nowhere, waiting for DefaultPreemption (in flight meanwhile)."""

    profile_name: str
    profile: Profile
    pods: list[QueuedPod]
    result: PlacementResult
    failed: list[int]  # indices into pods and result
    args: PreemptionArgs
    began: float


@dataclass
class _BindingInFlight:
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


def _with_postfilter(message: str, postfilter_message: str) -> str:
    """The burst's FailedScheduling text with the post-filter part appended: the same text
    ``framework.fit_error_message(n, reasons, postfilter_message=...)`` gives, built on the
    burst's own message so that a PreFilter rejection keeps its form."""
    return f"{message} {postfilter_message}" if postfilter_message else message


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
    ) -> None:
        self.config = config
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
        self._binding: dict[str, _BindingInFlight] = {}
        self.attempts: collections.OrderedDict[str, Attempt] = collections.OrderedDict()
        self.bursts = 0
        self.kernel_seconds = 0.0
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        # Preemption runs off the burst path, one job at a time in burst order; the pods
        # of queued and running jobs stay in flight (never popped again) until reported.
        self._preemptions: collections.deque[_PreemptionJob] = collections.deque()
        self._preemption_ready = asyncio.Event()
        self._preemption_task: asyncio.Task[None] | None = None
        self._preempting: set[str] = set()
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
            # The new leader decides again; the job running now writes nothing more.
            self._drop_preemptions()

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
                        pending = qp.key in self._binding or qp.key in self._preempting
                        if in_flight and not pending:
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
            preemption = profile.preemption if self.cluster is not None else None
            args = None
            if preemption is not None:
                args = PreemptionArgs(
                    preemption.min_candidate_nodes_percentage,
                    preemption.min_candidate_nodes_absolute,
                )
            for start in range(0, len(pods), limit):
                await self._place(name, profile.core, pods[start : start + limit], args)

    async def _place(
        self,
        profile_name: str,
        profile: Any,
        pods: list[QueuedPod],
        preemption: PreemptionArgs | None = None,
    ) -> None:
        objects = [to_api_dict(qp.pod) for qp in pods]
        nominated = self._nominations(pods, objects)
        workloads: Sequence[Mapping[str, Any]] = ()
        if self.workloads is not None:
            workloads = self.workloads({qp.pod.metadata.namespace for qp in pods})
        began = time.perf_counter()
        with self.cache.frozen() as state:
            reservations = self._reservations(state, nominated)
            result: PlacementResult
            if reservations:
                plan = segments(
                    [qp.priority for qp in pods],
                    reservations,
                    by_priority=self.config.profiles[0].queue_sort == names.PRIORITY_SORT,
                    groups=[gang.group_of(obj) for obj in objects],
                )
                result = await asyncio.to_thread(
                    place_reserving, state, objects, profile, plan, reservations, workloads
                )
            else:
                result = await asyncio.to_thread(
                    place_burst, state, objects, profile, workloads=workloads
                )
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
        failed: list[int] = []
        for i, qp in enumerate(pods):
            node = result.nodes[i]
            self._remember(qp, profile_name, result, i, len(pods))
            if node is not None:
                self._binding[qp.key] = _BindingInFlight(qp, profile_name, node, began)
                meta = qp.pod.metadata
                self.binder.bind(meta.namespace, meta.name, meta.uid, node)
            elif result.errors[i]:
                # A plugin failed the attempt (an invalid selector in the pod's spread
                # constraints): no PostFilter runs, the pod is backed off as an error.
                self._error(qp, profile_name, result.errors[i], elapsed)
            elif result.rolled_back[i]:
                # Its gang missed its minimum: no PostFilter plugin answers for it.
                self._unschedulable(qp, profile_name, result, i, elapsed)
            elif preemption is not None and not self._ends_before_preemption(
                profile_name, result, i
            ):
                failed.append(i)
            else:
                text = self._post_filter_text(profile_name, qp, None, result, i)
                self._unschedulable(qp, profile_name, result, i, elapsed, text)
        if failed:
            assert preemption is not None
            job = _PreemptionJob(profile_name, profile, pods, result, failed, preemption, began)
            self._enqueue_preemption(job)

    def _nominations(
        self, pods: list[QueuedPod], objects: list[dict[str, Any]]
    ) -> list[tuple[QueuedPod, str]]:
        """The queue's nominated pods outside this burst; the burst's own objects get the
        nomination this process wrote if the watch has not shown it yet (place_burst
        tries a pod's nominated node first)."""
        nominated = self.queue.nominated_pods()
        if not nominated:
            return []
        burst = {qp.key for qp in pods}
        for qp, obj in zip(pods, objects, strict=True):
            node = self.queue.nomination(qp)
            status = obj.setdefault("status", {})
            if node:
                status["nominatedNodeName"] = node
            else:
                status.pop("nominatedNodeName", None)
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
            Reservation(qp.key, to_api_dict(qp.pod), node, qp.priority)
            for qp, node in nominated
            if node in state.row_of and qp.key not in state.pods
        ]
        found.sort(key=lambda r: -r.priority)
        return found

    # --- preemption, off the burst path ------------------------------------------------

    def _enqueue_preemption(self, job: _PreemptionJob) -> None:
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

    async def _preempt(self, job: _PreemptionJob) -> None:
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
                _decide, self.cluster(), pending, job.profile, job.args
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
            has_claims=bool(qp.pod.spec.resource_claims),
            preemption=preemption,
            dynamic_resources_state=not self._no_dynamic_resources_state(profile, result, i),
        )

    @staticmethod
    def _no_dynamic_resources_state(profile: Any, result: PlacementResult, i: int) -> bool:
        """Whether a PreFilter rejection ended the PreFilter run before DynamicResources'
        PreFilter (which writes the state its PostFilter reads) ran for pod ``i``."""
        rejector = result.prefilter_rejector[i]
        if not rejector:
            return False
        pre_filters = profile.plugins.at("preFilter")
        if names.DYNAMIC_RESOURCES not in pre_filters:
            return True
        return rejector in pre_filters and pre_filters.index(
            names.DYNAMIC_RESOURCES
        ) > pre_filters.index(rejector)

    def _ends_before_preemption(self, profile_name: str, result: PlacementResult, i: int) -> bool:
        """DynamicResources' PostFilter ends the run with an error before DefaultPreemption
        is reached (see ``_no_dynamic_resources_state``): no preemption for the pod."""
        profile = self.config.profile(profile_name)
        if profile is None:
            return False
        post_filters = profile.plugins.at("postFilter")
        if names.DYNAMIC_RESOURCES not in post_filters:
            return False
        first = post_filters.index(names.DYNAMIC_RESOURCES) < post_filters.index(
            names.DEFAULT_PREEMPTION
        )
        return first and self._no_dynamic_resources_state(profile, result, i)

    def _with_nomination(self, qp: QueuedPod) -> dict[str, Any]:
        """The pod's API dict with the nomination the queue knows: one this process wrote
        may not be on the watched object yet, and a preemptor that does not know its
        nomination would not wait for its victims and preempt again."""
        pod = to_api_dict(qp.pod)
        node = self.queue.nomination(qp)
        status = pod.setdefault("status", {})
        if node:
            status["nominatedNodeName"] = node
        else:
            status.pop("nominatedNodeName", None)
        return pod

    def _take(self, qp: QueuedPod) -> bool:
        """Claim the report of a pod pending preemption (False: someone reported it)."""
        if qp.key not in self._preempting:
            return False
        self._preempting.discard(qp.key)
        return True

    def _drop_job(self, job: _PreemptionJob) -> None:
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
        )
        self.attempts.pop(qp.name, None)
        self.attempts[qp.name] = attempt
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
        message = _with_postfilter(result.messages[i], postfilter_message)
        attempt = self.attempts.get(qp.name)
        if attempt is not None and attempt.uid == qp.key:
            attempt.message = message
        plugins = result.rejectors[i]
        if self.recorder is not None:
            self.recorder.failed_scheduling(_ref(qp), message)
            self.recorder.pod_condition(
                _ref(qp), UNSCHEDULABLE, message, current_status=_pod_scheduled_status(qp)
            )
        if self.metrics is not None:
            self.metrics.observe_attempt(m.UNSCHEDULABLE, profile, elapsed)
        self.queue.add_unschedulable(qp, plugins)

    def _error(self, qp: QueuedPod, profile: str, error: str, elapsed: float) -> None:
        """The attempt failed with an error (a plugin's, or a preemption not written):
        report it as kube-scheduler reports an error status, and back the pod off."""
        if self.recorder is not None:
            self.recorder.failed_scheduling(_ref(qp), error)
            self.recorder.pod_condition(
                _ref(qp), SCHEDULER_ERROR, error, current_status=_pod_scheduled_status(qp)
            )
        if self.metrics is not None:
            self.metrics.observe_attempt(m.ERROR, profile, elapsed)
        self.queue.add_unschedulable(qp)

    # --- how binds settle (binder callbacks, on the event loop) -----------------------

    def _settled(self, result: BindResult) -> _BindingInFlight | None:
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
