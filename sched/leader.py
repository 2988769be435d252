"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's timing rules.

Every ``retry_period`` a candidate reads the Lease. It takes the Lease when nobody holds
it or when the holder's record has not changed for ``lease_duration`` (measured on our
own clock from when we last saw it change, so clocks of different machines never meet),
trying at the very moment that time is up (``next_try_in``).
The leader renews every ``retry_period``; if no renewal has succeeded for
``renew_deadline`` it stops leading at once (``on_stopped_leading``) rather than risk two
leaders binding. Writes are optimistic: an update carries the resourceVersion read, so of
two candidates racing for an expired Lease only one succeeds (the other gets 409).

A Lease request the API server refuses (401, 403: the Role grants another namespace or
name) would otherwise loop quietly every ``retry_period``: ``refusal`` says why while the
last read or write was refused (the scheduler's /readyz fails on it), and the first
refusal of each kind is logged as an error naming what the account needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from kubesalvo.sched.client import ApiClient, ApiError, is_transient
from kubesalvo.sched.events import micro_time
from kubesalvo.sched.metrics import SchedulerMetrics

log = logging.getLogger(__name__)


class LeaseMeta(msgspec.Struct, rename="camel", omit_defaults=True):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class LeaseSpec(msgspec.Struct, rename="camel", omit_defaults=True):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class Lease(msgspec.Struct, rename="camel", omit_defaults=True):
    metadata: LeaseMeta = msgspec.field(default_factory=LeaseMeta)
    spec: LeaseSpec = msgspec.field(default_factory=LeaseSpec)
    api_version: str = "coordination.k8s.io/v1"
    kind: str = "Lease"


_lease_decoder = msgspec.json.Decoder(Lease)
_encoder = msgspec.json.Encoder()


@dataclass
class LeaderElectionSettings:
    namespace: str = "kube-system"
    name: str = "kubesalvo"
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    # Give the Lease up on a clean stop so a successor need not wait lease_duration.
    release_on_cancel: bool = True

    def validate(self) -> None:
        if not self.identity:
            raise ValueError("leaderElection: identity must not be empty")
        if not self.lease_duration > self.renew_deadline > 0:
            raise ValueError("leaderElection: leaseDuration must be greater than renewDeadline")
        if not self.renew_deadline > self.retry_period * 1.2 > 0:
            raise ValueError("leaderElection: renewDeadline must exceed 1.2 * retryPeriod")


def may_acquire(
    spec: LeaseSpec, identity: str, observed_at: float, now: float, lease_duration: float
) -> bool:
    """Whether ``identity`` may take or renew a Lease whose record it saw change at
    ``observed_at`` (its own clock)."""
    holder = spec.holder_identity or ""
    if not holder or holder == identity:
        return True
    duration = spec.lease_duration_seconds or lease_duration
    return observed_at + duration <= now


def next_try_in(
    spec: LeaseSpec | None,
    identity: str,
    observed_at: float,
    now: float,
    retry_period: float,
    lease_duration: float,
) -> float:
    """How long a candidate that could not take the Lease waits before it tries again:
    one ``retry_period``, or less when another holder's Lease, as we saw it, ends sooner:
    we try the moment it ends. So a standby polling every ``retry_period`` sees the dead
    leader's last renewal at most one period after it, and takes the Lease at most
    ``lease_duration`` plus one period after the leader died (client-go's jittered polls,
    up to 2.2 periods each, can take ``lease_duration`` plus 4.4 periods). Candidates are
    a handful of replicas and writes carry the resourceVersion read: of several waking at
    once, one wins and the others get 409, so no jitter is needed to spread them."""
    holder = spec.holder_identity if spec is not None else ""
    if spec is None or not holder or holder == identity:
        return retry_period
    duration = spec.lease_duration_seconds or lease_duration
    ends_in = observed_at + duration - now
    # A millisecond past the end, so that may_acquire's "ended" holds when we wake.
    return min(retry_period, max(ends_in, 0.0) + 0.001)


class LeaderElector:
    """Runs the election; ``is_leader`` and ``leading`` tell the rest of the scheduler."""

    def __init__(
        self,
        client: ApiClient,
        settings: LeaderElectionSettings,
        *,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        settings.validate()
        self.metrics = metrics
        self.client = client
        self.settings = settings
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._clock = clock
        self.leading = asyncio.Event()
        self.observed_holder = ""
        self._observed: Lease | None = None
        self._observed_at = 0.0
        self._task: asyncio.Task[None] | None = None
        # Why the last read / write of the Lease was refused; "" once one succeeds.
        self._refused = {"read": "", "write": ""}

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    @property
    def refusal(self) -> str:
        """Why the Lease cannot be read or written now ("" when it can)."""
        return self._refused["read"] or self._refused["write"]

    def _note(self, kind: str, error: ApiError | None) -> None:
        if error is None or error.status not in (401, 403):
            if error is None:
                self._refused[kind] = ""
            return
        s = self.settings
        reason = f"{error.status} {error.reason}: {error.message}"
        if not self._refused[kind]:
            log.error(
                "lease %s/%s: %s refused (%s); the account needs get, create and update on "
                "leases in %s (set leaderElection.resourceNamespace/resourceName to the Lease "
                "its Role grants)",
                s.namespace,
                s.name,
                kind,
                reason,
                s.namespace,
            )
        self._refused[kind] = reason

    @property
    def _path(self) -> str:
        s = self.settings
        return f"/apis/coordination.k8s.io/v1/namespaces/{s.namespace}/leases/{s.name}"

    def start(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name="leader-election")
        return self._task

    async def stop(self) -> None:
        """Stop campaigning; a leader releases the Lease (if so configured) and steps down."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run(self) -> None:
        """Acquire, then renew until the renew deadline passes; then campaign again."""
        try:
            while True:
                await self._acquire()
                self._become_leader()
                await self._renew_until_lost()
                self._step_down()
        except asyncio.CancelledError:
            if self.is_leader:
                if self.settings.release_on_cancel:
                    await self._release()
                self._step_down()
            raise

    async def _acquire(self) -> None:
        s = self.settings
        while not await self._try_acquire_or_renew():
            spec = self._observed.spec if self._observed is not None else None
            await asyncio.sleep(
                next_try_in(
                    spec,
                    s.identity,
                    self._observed_at,
                    self._clock(),
                    s.retry_period,
                    s.lease_duration,
                )
            )

    async def _renew_until_lost(self) -> None:
        last_renewed = self._clock()
        while True:
            await asyncio.sleep(self.settings.retry_period)
            remaining = self.settings.renew_deadline - (self._clock() - last_renewed)
            try:
                renewed = await asyncio.wait_for(
                    self._try_acquire_or_renew(), timeout=max(remaining, 0.001)
                )
            except TimeoutError:
                renewed = False
            if renewed:
                last_renewed = self._clock()
            elif self._clock() - last_renewed >= self.settings.renew_deadline:
                log.error("lease %s: renew deadline passed, stepping down", self.settings.name)
                return

    def _become_leader(self) -> None:
        log.info("lease %s: acquired by %s", self.settings.name, self.settings.identity)
        self.leading.set()
        self._report(1)
        if self._on_started is not None:
            self._on_started()

    def _step_down(self) -> None:
        if not self.is_leader:
            return
        self.leading.clear()
        self._report(0)
        if self._on_stopped is not None:
            self._on_stopped()

    def _report(self, value: int) -> None:
        if self.metrics is not None:
            self.metrics.leader.labels(name=self.settings.name).set(value)

    async def _try_acquire_or_renew(self) -> bool:
        s = self.settings
        now_wall = micro_time(time.time())
        try:
            current = await self._get()
        except ApiError as error:
            log.warning("lease %s: read failed: %s", s.name, error)
            self._note("read", error)
            return False
        except Exception as error:
            if not is_transient(error):
                raise
            return False
        self._note("read", None)
        if current is None:
            lease = Lease(
                metadata=LeaseMeta(name=s.name, namespace=s.namespace),
                spec=self._spec(now_wall, now_wall, 0),
            )
            return await self._write(
                "POST", f"/apis/coordination.k8s.io/v1/namespaces/{s.namespace}/leases", lease
            )

        self._observe(current)
        if not may_acquire(
            current.spec, s.identity, self._observed_at, self._clock(), s.lease_duration
        ):
            return False
        spec = current.spec
        if spec.holder_identity == s.identity and spec.acquire_time:
            new_spec = self._spec(spec.acquire_time, now_wall, spec.lease_transitions or 0)
        else:
            # A change of holder, a released (empty) one included, is a transition.
            transitions = (spec.lease_transitions or 0) + 1
            new_spec = self._spec(now_wall, now_wall, transitions)
        lease = Lease(metadata=current.metadata, spec=new_spec)
        return await self._write("PUT", self._path, lease)

    def _spec(self, acquire: str, renew: str, transitions: int) -> LeaseSpec:
        return LeaseSpec(
            holder_identity=self.settings.identity,
            lease_duration_seconds=round(self.settings.lease_duration),
            acquire_time=acquire,
            renew_time=renew,
            lease_transitions=transitions,
        )

    def _observe(self, lease: Lease) -> None:
        if self._observed is None or lease.spec != self._observed.spec:
            self._observed = lease
            self._observed_at = self._clock()
        holder = lease.spec.holder_identity or ""
        if holder != self.observed_holder:
            self.observed_holder = holder
            if holder and self._on_new_leader is not None:
                self._on_new_leader(holder)

    async def _get(self) -> Lease | None:
        try:
            response = await self.client.request("GET", self._path, rate_limited=False)
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        return _lease_decoder.decode(response.body)

    async def _write(self, method: str, path: str, lease: Lease) -> bool:
        try:
            response = await self.client.request(
                method, path, body=_encoder.encode(lease), rate_limited=False
            )
        except ApiError as error:
            # 409: someone else wrote first (optimistic concurrency); try next period.
            log.debug("lease %s: %s failed: %s", self.settings.name, method, error)
            self._note("write", error)
            return False
        except Exception as error:
            if not is_transient(error):
                raise
            return False
        self._note("write", None)
        self._observe(_lease_decoder.decode(response.body))
        return True

    async def _release(self) -> None:
        if self._observed is None:
            return
        spec = LeaseSpec(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=self._observed.spec.acquire_time,
            renew_time=micro_time(time.time()),
            lease_transitions=self._observed.spec.lease_transitions,
        )
        lease = Lease(metadata=self._observed.metadata, spec=spec)
        try:
            await asyncio.wait_for(
                self._write("PUT", self._path, lease), self.settings.retry_period
            )
        except (TimeoutError, ApiError):
            log.warning("lease %s: release failed; it expires on its own", self.settings.name)


class ElectionThread:
    """A ``LeaderElector`` on a thread of its own, with its own event loop and connection.

    The scheduler's event loop places whole bursts: encoding and committing thousands of
    pods holds it for a second or more at a time. Renewals on that loop would then miss
    the renew deadline and a busy leader would step down in the middle of its burst
    (cancelling the binds it had not sent, which can leave a gang part-bound), as
    kube-scheduler would not: it renews from a goroutine of its own. Here the election
    keeps its period on its own thread; the callbacks run on the scheduler's loop.
    ``is_leader`` is set before ``on_started_leading`` is scheduled and cleared before
    ``on_stopped_leading`` is, so the binder stops sending at once.
    """

    def __init__(
        self,
        client: ApiClient,
        settings: LeaderElectionSettings,
        *,
        on_started_leading: Callable[[], None] | None = None,
        on_stopped_leading: Callable[[], None] | None = None,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        settings.validate()
        self.settings = settings
        self._credentials = client.credentials
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._metrics = metrics
        self._leading = threading.Event()
        self._main: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._elector: LeaderElector | None = None

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    @property
    def refusal(self) -> str:
        """Why the Lease is refused now ("" when it is not): see ``LeaderElector``."""
        elector = self._elector
        return elector.refusal if elector is not None else ""

    def start(self) -> None:
        """Start campaigning (from the scheduler's running loop)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._main = asyncio.get_running_loop()
        self._ready.clear()
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)
        self._thread.start()

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop campaigning: a leader releases the Lease (if so configured) and steps down."""
        thread = self._thread
        if thread is None:
            return
        await asyncio.to_thread(self._ready.wait, timeout)
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # its loop ended meanwhile
                loop.call_soon_threadsafe(task.cancel)
        await asyncio.to_thread(thread.join, timeout)
        self._thread = None

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._campaign())
        finally:
            loop.close()

    async def _campaign(self) -> None:
        client = ApiClient(self._credentials, qps=1000.0, burst=1000)
        elector = LeaderElector(
            client,
            self.settings,
            on_started_leading=self._started,
            on_stopped_leading=self._stopped,
            metrics=self._metrics,
        )
        self._elector = elector
        self._task = asyncio.current_task()
        self._ready.set()
        try:
            await elector.run()
        except asyncio.CancelledError:
            pass
        finally:
            await client.close()

    def _started(self) -> None:
        self._leading.set()
        self._post(self._on_started)

    def _stopped(self) -> None:
        self._leading.clear()
        self._post(self._on_stopped)

    def _post(self, callback: Callable[[], None] | None) -> None:
        if callback is not None and self._main is not None and not self._main.is_closed():
            with contextlib.suppress(RuntimeError):  # the scheduler's loop has ended
                self._main.call_soon_threadsafe(callback)
