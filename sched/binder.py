"""The binder: concurrent ``POST pods/{name}/binding`` calls, each retried until it settles.

The cycle assumes a placement in ClusterState at once and hands the bind here; the
binder reports back how it settled, through the returned task and the callbacks:

- BOUND: the API server recorded the node (``on_bound``: the cycle confirms the assumption).
- FORGOTTEN: the pod is gone (404), was recreated (the Binding's ``metadata.uid``
  precondition fails with 409), or is already bound elsewhere (409) - the assumption
  is wrong and must be forgotten, not retried (``on_forget``).
- FAILED: the API server kept failing (5xx, resets) past the retry budget, refused the
  request (403, 422), or this replica is no longer the leader (``on_failed``: the cycle
  un-assumes and requeues the pod with backoff).

A retry after a lost response can meet its own earlier success as 409 "already assigned
to node X"; when X is our node that is a success, which is how a bind stays exactly-once
even when the API server applied a request whose answer never arrived. Throttling (429)
waits for Retry-After and does not use up the retry budget. The number of binds in flight
is bounded, and every request also passes the client's QPS/burst limiter.

A bind may carry a ``prepare`` step (the PreBind plugins, sched/cycle/prebind.py): it is
awaited first, outside the in-flight bound (a PreBind may wait minutes for a volume), and
when it raises, the bind settles FAILED with that exception as its error and no POST.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec

from kubesalvo.sched.client import ApiClient, ApiError, is_transient
from kubesalvo.sched.metrics import SchedulerMetrics

log = logging.getLogger(__name__)


class BindOutcome(enum.Enum):
    BOUND = "bound"
    FORGOTTEN = "forgotten"
    FAILED = "failed"


@dataclass
class BindResult:
    outcome: BindOutcome
    namespace: str
    name: str
    uid: str
    node: str
    attempts: int
    error: BaseException | None = None
    # perf_counter when the POST that settled the bind was sent, and when it was answered
    # (0.0: no POST was answered); the bind stage of the latency histograms.
    sent: float = 0.0
    answered: float = 0.0
    # perf_counter when the cycle handed the bind over (the bind_wait stage lasts until
    # ``sent``: a free slot, the client's limiter, the event loop's turn).
    handed: float = 0.0


Callback = Callable[[BindResult], None]
# What must be done before the binding POST (the PreBind plugins); raises to stop the bind.
Prepare = Callable[[], Awaitable[None]]


class _ObjectReference(msgspec.Struct):
    name: str
    namespace: str | None = None
    uid: str | None = None


class _Target(msgspec.Struct, rename="camel"):
    name: str
    api_version: str = "v1"
    kind: str = "Node"


class _BindingBody(msgspec.Struct, rename="camel"):
    metadata: _ObjectReference
    target: _Target
    api_version: str = "v1"
    kind: str = "Binding"


_encoder = msgspec.json.Encoder()

# The API server's text for a pod that already has spec.nodeName (pods/binding, 409).
_ALREADY_ASSIGNED = re.compile(r'is already assigned to node "([^"]*)"')
# ... and for a Binding whose metadata.uid is not the pod's (the pod was recreated).
_UID_CHANGED = re.compile(r"Precondition failed: UID in precondition")


def binding_body(namespace: str, name: str, uid: str, node: str) -> bytes:
    """A v1 Binding whose ``metadata.uid`` makes the API server refuse a recreated pod."""
    reference = _ObjectReference(name=name, namespace=namespace, uid=uid or None)
    return _encoder.encode(_BindingBody(metadata=reference, target=_Target(name=node)))


def classify_conflict(error: ApiError, node: str) -> BindOutcome | None:
    """What a 409 from pods/binding means for a bind to ``node``; None for a conflict that
    says nothing about the pod and is retried like a 5xx. (With etcd down, kube-apiserver
    answers a binding 409 "rpc error: code = Unavailable": forgetting the pod then would
    lose it, since no watch event ever brings an unchanged pending pod back.)"""
    match = _ALREADY_ASSIGNED.search(error.message)
    if match:
        return BindOutcome.BOUND if match.group(1) == node else BindOutcome.FORGOTTEN
    if _UID_CHANGED.search(error.message):
        return BindOutcome.FORGOTTEN
    return None


@dataclass
class BinderSettings:
    max_in_flight: int = 256
    # Attempts for errors that may heal (5xx, connection resets, timeouts); 429s are free.
    max_attempts: int = 6
    backoff_initial: float = 0.1
    backoff_max: float = 5.0
    request_timeout: float = 30.0


class Binder:
    """Sends binds concurrently; each ``bind`` returns a task resolving to its result."""

    def __init__(
        self,
        client: ApiClient,
        settings: BinderSettings | None = None,
        *,
        on_bound: Callback | None = None,
        on_forget: Callback | None = None,
        on_failed: Callback | None = None,
        is_leader: Callable[[], bool] | None = None,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self.client = client
        self.metrics = metrics
        self.settings = settings or BinderSettings()
        self._callbacks = {
            BindOutcome.BOUND: on_bound,
            BindOutcome.FORGOTTEN: on_forget,
            BindOutcome.FAILED: on_failed,
        }
        self._is_leader = is_leader
        self._slots = asyncio.Semaphore(self.settings.max_in_flight)
        self._tasks: set[asyncio.Task[BindResult]] = set()
        # Binds ready to send that wait for a free slot: while there are any, a pod placed
        # now only queues behind them (the burst cycle's gathering reads it).
        self.waiting = 0
        self.counts = dict.fromkeys(BindOutcome, 0)

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def bind(
        self, namespace: str, name: str, uid: str, node: str, prepare: Prepare | None = None
    ) -> asyncio.Task[BindResult]:
        handed = time.perf_counter()
        task = asyncio.create_task(self._bind(namespace, name, uid, node, prepare, handed))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for the binds in flight (a SIGTERM lets them finish before exiting)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    async def cancel_all(self) -> None:
        """Stop every bind at once (leadership lost); each settles as FAILED."""
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    async def _bind(
        self,
        namespace: str,
        name: str,
        uid: str,
        node: str,
        prepare: Prepare | None,
        handed: float = 0.0,
    ) -> BindResult:
        body = binding_body(namespace, name, uid, node)
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
        attempts = 0
        failures = 0
        sent = answered = 0.0
        outcome = BindOutcome.FAILED
        error: BaseException | None = None
        try:
            if prepare is not None and self._leading():
                await prepare()
            self.waiting += 1
            try:
                await self._slots.acquire()
            finally:
                self.waiting -= 1
            try:
                while True:
                    if not self._leading():
                        error = RuntimeError("not the leader")
                        break
                    attempts += 1
                    sent = time.perf_counter()
                    try:
                        await self.client.request(
                            "POST", path, body=body, timeout=self.settings.request_timeout
                        )
                        answered = time.perf_counter()
                        outcome, error = BindOutcome.BOUND, None
                        break
                    except ApiError as api_error:
                        error = api_error
                        if api_error.status == 404:
                            outcome = BindOutcome.FORGOTTEN
                            break
                        conflict = None
                        if api_error.status == 409:
                            conflict = classify_conflict(api_error, node)
                        if conflict is not None:
                            outcome = conflict
                            error = None if outcome is BindOutcome.BOUND else api_error
                            break
                        if api_error.status == 429:
                            await asyncio.sleep(api_error.retry_after or self._delay(1))
                            continue
                        if not api_error.transient and api_error.status != 409:
                            break
                    except Exception as other:
                        if not is_transient(other):
                            raise
                        error = other
                    failures += 1
                    if failures >= self.settings.max_attempts:
                        break
                    await asyncio.sleep(self._delay(failures))
            finally:
                self._slots.release()
        except asyncio.CancelledError:
            error = RuntimeError("bind cancelled")
            outcome = BindOutcome.FAILED
        except Exception as failed:  # only ``prepare`` raises past the loop's handlers
            if prepare is None or attempts:
                raise
            error = failed
        result = BindResult(
            outcome, namespace, name, uid, node, attempts, error, sent, answered, handed
        )
        self.counts[outcome] += 1
        if self.metrics is not None:
            self.metrics.count_bind(outcome.value)
        if outcome is not BindOutcome.BOUND:
            log.info("bind of %s/%s to %s %s: %s", namespace, name, node, outcome.value, error)
        callback = self._callbacks[outcome]
        if callback is not None:
            try:
                callback(result)
            except Exception:
                log.exception("bind %s callback failed for %s/%s", outcome.value, namespace, name)
        return result

    def _leading(self) -> bool:
        return self._is_leader is None or self._is_leader()

    def _delay(self, failures: int) -> float:
        base = min(self.settings.backoff_max, self.settings.backoff_initial * 2 ** (failures - 1))
        return base * random.uniform(0.5, 1.0)
