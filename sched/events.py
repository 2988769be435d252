"""Scheduling events and the PodScheduled condition, sent off the bind path.

``EventRecorder`` takes kube-scheduler's events (``Scheduled``, ``FailedScheduling``,
``Preempted``, as ``events.k8s.io/v1`` Events) and PodScheduled=False condition patches
without waiting: the calls only note what must be written, and a few workers write it
through their own QPS/burst limiter, so the bind path never waits on them and events
never take the binder's share of the API server.

Aggregation keeps a large failure from flooding the API server:

- Events with the same regarding object, related object, type, reason, action and note
  within ``series_window`` form a series: the first creates an Event, the rest only raise
  ``series.count``: one PATCH carries every occurrence that arrived while the previous
  write of that series was waiting for its turn. At most ``max_series`` series are
  remembered once written (client-go's correlator keeps 4,096), the least recently
  occurred forgotten first: every bound pod has a Scheduled series of its own, and at
  50 pods/s the whole window would hold 18,000 that never recur. Written series wait in a
  heap by their last occurrence, so forgetting one costs O(log n) however many series
  still wait for their write (a 10,000-pod burst queues 10,000 Scheduled events at once).
- Condition patches are coalesced per pod (the latest wins) and skipped when the pod's
  last written condition already says the same.
- At most ``max_pending`` writes wait; past that new ones are dropped and counted, because
  losing an event is better than falling minutes behind on a 10,000-pod failure.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import heapq
import itertools
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from kubesalvo.sched.client import ApiClient, ApiError, TokenBucket, is_transient
from kubesalvo.sched.metrics import SchedulerMetrics

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"

# kube-scheduler's reasons and actions.
SCHEDULED = "Scheduled"
FAILED_SCHEDULING = "FailedScheduling"
PREEMPTED = "Preempted"
UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"

# events.k8s.io/v1 refuses a note longer than this many bytes.
MAX_NOTE_BYTES = 1024


@dataclass(frozen=True)
class ObjectRef:
    """The object an event is about (``regarding``) or relates to (``related``)."""

    namespace: str
    name: str
    uid: str = ""
    kind: str = "Pod"
    api_version: str = "v1"


def micro_time(epoch: float) -> str:
    """A metav1.MicroTime: RFC 3339 in UTC with microseconds."""
    moment = datetime.datetime.fromtimestamp(epoch, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339(epoch: float) -> str:
    """A metav1.Time: RFC 3339 in UTC to the second."""
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def truncate_note(note: str) -> str:
    encoded = note.encode()
    if len(encoded) <= MAX_NOTE_BYTES:
        return note
    return encoded[: MAX_NOTE_BYTES - 3].decode("utf-8", "ignore") + "..."


# (regarding, related, type, reason, action, note, reporting controller)
EventKey = tuple[ObjectRef, ObjectRef | None, str, str, str, str, str]


@dataclass
class _Series:
    regarding: ObjectRef
    related: ObjectRef | None
    type: str
    reason: str
    action: str
    note: str
    controller: str
    first_time: float
    last_time: float
    count: int = 1
    sent_count: int = 0
    name: str = ""  # the Event object's name once created
    stamp: int = 0  # which occurrence was last: tells a heap entry from a stale one


@dataclass
class _Condition:
    pod: ObjectRef
    reason: str
    message: str
    nominated_node_name: str | None
    keep_transition_time: bool


@dataclass
class RecorderSettings:
    component: str = "kubesalvo"
    instance: str = field(default_factory=lambda: f"kubesalvo-{socket.gethostname()}")
    qps: float = 50.0
    burst: int = 100
    workers: int = 4
    max_pending: int = 10_000
    series_window: float = 360.0  # client-go's: isomorphic events within 6 minutes
    max_series: int = 4096  # written series remembered past that are forgotten, oldest first
    remembered_conditions: int = 100_000
    # A write the API server could not take (5xx, 429, a broken connection: an outage)
    # is tried again, after retry_delay doubling up to max_retry_delay, at most max_tries
    # times in all (client-go's event sink tries 12 times).
    max_tries: int = 12
    retry_delay: float = 0.5
    max_retry_delay: float = 10.0


def _ref_dict(ref: ObjectRef) -> dict[str, str]:
    out = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name}
    if ref.namespace:
        out["namespace"] = ref.namespace
    if ref.uid:
        out["uid"] = ref.uid
    return out


class EventRecorder:
    """Non-blocking recording of events and conditions; ``start`` runs the writers."""

    def __init__(
        self,
        client: ApiClient,
        settings: RecorderSettings | None = None,
        clock: Callable[[], float] = time.time,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self.client = client
        self.metrics = metrics
        self.settings = settings or RecorderSettings()
        self._clock = clock
        self.limiter = TokenBucket(self.settings.qps, self.settings.burst)
        self._series: dict[EventKey, _Series] = {}
        # Fully written series by (last occurrence, stamp): the next to forget on top. An
        # entry whose series occurred again (or is gone) is stale and skipped (see _prune).
        self._settled: list[tuple[float, int, EventKey]] = []
        self._stamps = itertools.count(1)
        self._conditions: dict[tuple[str, str], _Condition] = {}
        # Last condition written per pod: (uid, reason, message).
        self._written: collections.OrderedDict[tuple[str, str], tuple[str, str, str]] = (
            collections.OrderedDict()
        )
        self._queue: collections.deque[tuple[str, object]] = collections.deque()
        self._queued: set[tuple[str, object]] = set()
        self._busy: set[tuple[str, object]] = set()
        self._wakeup = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []
        # Failed tries of the writes waiting for another (see RecorderSettings.max_tries).
        self._tries: dict[tuple[str, object], int] = {}
        self._retries: set[asyncio.TimerHandle] = set()
        self.dropped = 0
        self.gave_up = 0
        self.sent = collections.Counter[str]()

    # -- what the scheduler calls ------------------------------------------------------
    # ``profile``: as in kube-scheduler, each profile reports under its schedulerName
    # (reportingController); None uses ``settings.component``.

    def scheduled(self, pod: ObjectRef, node: str, profile: str | None = None) -> None:
        note = f"Successfully assigned {pod.namespace}/{pod.name} to {node}"
        self.event(pod, NORMAL, SCHEDULED, "Binding", note, controller=profile)

    def failed_scheduling(self, pod: ObjectRef, message: str, profile: str | None = None) -> None:
        self.event(pod, WARNING, FAILED_SCHEDULING, "Scheduling", message, controller=profile)

    def preempted(
        self, victim: ObjectRef, preemptor: ObjectRef, node: str, profile: str | None = None
    ) -> None:
        note = f"Preempted by pod {preemptor.uid} on node {node}"
        self.event(
            victim, NORMAL, PREEMPTED, "Preempting", note, related=preemptor, controller=profile
        )

    def event(
        self,
        regarding: ObjectRef,
        type_: str,
        reason: str,
        action: str,
        note: str,
        related: ObjectRef | None = None,
        controller: str | None = None,
    ) -> None:
        now = self._clock()
        note = truncate_note(note)
        controller = controller or self.settings.component
        key: EventKey = (regarding, related, type_, reason, action, note, controller)
        series = self._series.get(key)
        if series is not None and now - series.last_time <= self.settings.series_window:
            series.count += 1
            series.last_time = now
        else:
            series = _Series(regarding, related, type_, reason, action, note, controller, now, now)
            self._series[key] = series
        series.stamp = next(self._stamps)
        self._enqueue(("event", key))

    def pod_condition(
        self,
        pod: ObjectRef,
        reason: str,
        message: str,
        *,
        nominated_node_name: str | None = None,
        current_status: str | None = None,
    ) -> None:
        """Set PodScheduled=False with ``reason`` (Unschedulable or SchedulerError).

        ``current_status`` is the pod's PodScheduled status as last seen; when it is
        already False the transition time is left as it is, as kube-scheduler does.
        """
        key = (pod.namespace, pod.name)
        if self._written.get(key) == (pod.uid, reason, message) and nominated_node_name is None:
            return
        self._conditions[key] = _Condition(
            pod, reason, message, nominated_node_name, current_status == "False"
        )
        self._enqueue(("condition", key))

    def forget_pod(self, namespace: str, name: str) -> None:
        """Drop what is remembered of a deleted pod."""
        self._written.pop((namespace, name), None)

    # -- the writers -------------------------------------------------------------------

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def series_remembered(self) -> int:
        return len(self._series)

    def start(self) -> None:
        if not self._workers:
            self._workers = [
                asyncio.create_task(self._work(), name=f"event-writer-{i}")
                for i in range(self.settings.workers)
            ]

    async def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every noted write is done (or ``timeout`` passes); True if done."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._queue or self._busy or self._tries:
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    async def stop(self, flush_timeout: float = 5.0) -> None:
        """Write what is pending (for at most ``flush_timeout``), then stop the writers."""
        await self.flush(flush_timeout)
        for handle in self._retries:
            handle.cancel()
        self._retries.clear()
        for worker in self._workers:
            worker.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []

    def _enqueue(self, item: tuple[str, object]) -> None:
        if item in self._queued:
            return  # already waiting: the writer will send the latest state
        if len(self._queue) >= self.settings.max_pending:
            self.dropped += 1
            if self.metrics is not None:
                self.metrics.events_dropped.inc()
            return
        self._queued.add(item)
        self._queue.append(item)
        self._wakeup.set()

    async def _work(self) -> None:
        while True:
            if not self._queue:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            item = self._queue.popleft()
            if item in self._busy:
                # Another writer is on it; look again once it is done.
                self._queue.append(item)
                await asyncio.sleep(0.01)
                continue
            self._queued.discard(item)
            self._busy.add(item)
            try:
                await self.limiter.acquire()
                if item[0] == "event":
                    await self._write_event(item[1])  # type: ignore[arg-type]
                else:
                    await self._write_condition(item[1])  # type: ignore[arg-type]
            except asyncio.CancelledError:
                raise
            except Exception as error:
                self._failed(item, error)
            else:
                self._tries.pop(item, None)
                if item[0] == "event":
                    self._settle(item[1])  # type: ignore[arg-type]
            finally:
                self._busy.discard(item)
            self._prune()

    def _failed(self, item: tuple[str, object], error: Exception) -> None:
        """A write failed: try it again later if the API server may take it then; events
        and conditions are best effort, as in client-go, so past max_tries it is logged
        and dropped (the pod's next attempt writes its condition anew)."""
        tries = self._tries.pop(item, 0) + 1
        if not is_transient(error) or tries >= self.settings.max_tries:
            self.gave_up += 1
            if item[0] == "condition" and item not in self._queued:
                # (A newer condition noted meanwhile is queued: that one is still written.)
                self._conditions.pop(item[1], None)  # type: ignore[call-overload]
            log.warning("writing %s failed (%d tries): %s", item[0], tries, error)
            return
        self._tries[item] = tries
        delay = min(self.settings.retry_delay * 2 ** (tries - 1), self.settings.max_retry_delay)
        loop = asyncio.get_running_loop()

        def again() -> None:
            self._retries.discard(handle)
            self._enqueue(item)

        handle = loop.call_later(delay, again)
        self._retries.add(handle)

    async def _write_event(self, key: EventKey) -> None:
        series = self._series.get(key)
        if series is None or series.count == series.sent_count:
            return
        count = series.count
        if series.name:
            try:
                await self._patch_series(series, count)
                series.sent_count = count
                self.sent["series"] += 1
                return
            except ApiError as error:
                if error.status != 404:
                    raise
                series.name = ""  # the Event expired (TTL): write a new one
        await self._create_event(series, count)
        series.sent_count = count
        self.sent["event"] += 1

    async def _create_event(self, series: _Series, count: int) -> None:
        ref = series.regarding
        namespace = ref.namespace or "default"
        name = f"{ref.name}.{time.time_ns():x}"
        body: dict[str, object] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(series.first_time),
            "reportingController": series.controller,
            "reportingInstance": self.settings.instance,
            "action": series.action,
            "reason": series.reason,
            "regarding": _ref_dict(ref),
            "note": series.note,
            "type": series.type,
        }
        if series.related is not None:
            body["related"] = _ref_dict(series.related)
        if count > 1:
            body["series"] = {"count": count, "lastObservedTime": micro_time(series.last_time)}
        await self.client.request(
            "POST",
            f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
            body=msgspec.json.encode(body),
            rate_limited=False,
        )
        series.name = name

    async def _patch_series(self, series: _Series, count: int) -> None:
        namespace = series.regarding.namespace or "default"
        patch = {"series": {"count": count, "lastObservedTime": micro_time(series.last_time)}}
        await self.client.request(
            "PATCH",
            f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/{series.name}",
            body=msgspec.json.encode(patch),
            content_type="application/merge-patch+json",
            rate_limited=False,
        )

    async def _write_condition(self, key: tuple[str, str]) -> None:
        condition = self._conditions.pop(key, None)
        if condition is None:
            return
        pod = condition.pod
        entry: dict[str, object] = {
            "type": "PodScheduled",
            "status": "False",
            "reason": condition.reason,
            "message": condition.message,
            "lastProbeTime": None,
        }
        if not condition.keep_transition_time:
            entry["lastTransitionTime"] = rfc3339(self._clock())
        status: dict[str, object] = {"conditions": [entry]}
        if condition.nominated_node_name is not None:
            status["nominatedNodeName"] = condition.nominated_node_name or None
        try:
            await self.client.request(
                "PATCH",
                f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status",
                body=msgspec.json.encode({"status": status}),
                content_type="application/strategic-merge-patch+json",
                rate_limited=False,
            )
        except ApiError as error:
            if error.status == 404:
                return  # the pod is gone; nothing to tell it
            self._conditions.setdefault(key, condition)  # a newer one noted meanwhile wins
            raise
        except BaseException:
            self._conditions.setdefault(key, condition)
            raise
        self.sent["condition"] += 1
        self._written[key] = (pod.uid, condition.reason, condition.message)
        self._written.move_to_end(key)
        while len(self._written) > self.settings.remembered_conditions:
            self._written.popitem(last=False)

    def _settle(self, key: EventKey) -> None:
        """A write of the series ended: once it counts every occurrence, it may be forgotten."""
        series = self._series.get(key)
        if series is not None and series.count == series.sent_count:
            heapq.heappush(self._settled, (series.last_time, series.stamp, key))

    def _prune(self) -> None:
        """Forget fully written series, least recently occurred first, while more than
        ``max_series`` are remembered, and any that last occurred before the window. A
        series still waiting for a write stays (the newest, or retries during an outage)."""
        limit = self.settings.max_series
        horizon = self._clock() - self.settings.series_window
        settled = self._settled
        while settled:
            last_time, stamp, key = settled[0]
            series = self._series.get(key)
            if series is None or series.stamp != stamp or series.count != series.sent_count:
                heapq.heappop(settled)  # stale: it occurred again since (or is gone)
                continue
            if len(self._series) <= limit and last_time >= horizon:
                break
            heapq.heappop(settled)
            del self._series[key]
