"""The scheduling queue: pending pods split by job, as in kube-scheduler's PriorityQueue.

* **activeQ** holds the pods ready for the next burst, in the order of the profile's
  QueueSort plugin (``PrioritySort``: higher priority first, then earlier queued).
* **backoffQ** holds pods waiting out their backoff after a failed attempt: the n-th
  failure waits ``podInitialBackoffSeconds * 2**(n-1)``, at most ``podMaxBackoffSeconds``,
  counted from the failure. Failures with no rejecting plugin (an API error, a failed
  bind) count separately and never pop early (kube-scheduler's error backoff).
* **unschedulable** pods are parked with the plugins that rejected them until a cluster
  event one of those plugins registered (the registry's ``PLUGIN_EVENTS``), and that the plugin's
  hint (``hints``) does not rule out, moves them back (to backoffQ if still backing off,
  else activeQ), or until they have waited ``podMaxInUnschedulablePodsDuration`` (5
  minutes by default).
* **gated** pods (non-empty ``spec.schedulingGates`` with the SchedulingGates plugin on,
  or a resource claim not made yet with DynamicResources on) wait outside the other
  queues until an update removes their gates or the claim appears (``release_gated``).
* **in flight**: pods handed out by :meth:`pop_burst` until :meth:`done` or
  :meth:`add_unschedulable`. Events that arrive meanwhile are remembered, so that a pod
  that fails is retried at once if something happened during its attempt that could
  help it (kube-scheduler's in-flight events).

As kube-scheduler does with ``SchedulerPopFromBackoffQ`` (beta, on in v1.34), a burst
with room left is topped up from the backoffQ (rejected pods only), so that an idle
scheduler retries early. kube-scheduler aligns backoff expiries to one-second windows
to sort pods of one window by priority; kubesalvo does not, since a burst takes every
ready pod at once and sorts the burst.

A pod is in exactly one of these places at any time, keyed by its UID; adding a pod the
queue already holds updates it.

Each pod entering activeQ, backoffQ or the unschedulable pods (gated ones included, as
upstream keeps them there) is told to ``on_incoming(queue, event)`` with kube-scheduler's
event label (``UnschedulablePodAdd``, ``ScheduleAttemptFailure``, ``BackoffComplete``,
``PopFromBackoffQ``, ``NodeAdd``, ...), for ``scheduler_queue_incoming_pods_total``.

The hints and the pod update events read pods' API dicts through ``pod_api`` (the
runtime's pod memo, sched/informers/forms.py): a pod version is converted once in the
whole runtime, the queue's judgements included.

Gangs (``core/plugins/coscheduling/gang.py``: pods labelled with a pod group) are popped whole: when
:meth:`pop_burst` takes a member, every other member waiting in activeQ, backoffQ or
among the unschedulable pods joins the same burst (gated ones stay), so that the kernel
sees the gang at once and a late member brings the rest back with it. :meth:`gang_members`
tells the cycle which members are pending.

Threading: the queue is not thread-safe. It lives on the asyncio event loop thread; the
informer handlers, the burst cycle and the binder call it from that thread only (the
kernel's worker thread never touches it). Nothing here blocks or sleeps: the runtime
calls :meth:`pop_burst` when woken by ``on_active`` or at :meth:`next_wakeup`.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any

import msgspec

from kubesalvo.core.pernode.hint_objects import PodForm, pod_forms
from kubesalvo.core.plugins import names, registry
from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.plugins.coscheduling.gang import gang_of
from kubesalvo.sched.queue.clock import Clock, MonotonicClock
from kubesalvo.sched.queue.cluster_events import (
    FORCE_ACTIVATE,
    PLUGIN_EVENTS,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    EventResource,
    HintFn,
    pod_update_events,
)
from kubesalvo.sched.queue.sorting import SortKey, sort_key_for

__all__ = ["QueueName", "QueuedPod", "SchedulingQueue", "incoming_label", "pod_key"]

log = logging.getLogger(__name__)

DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS = 300.0


class QueueName(StrEnum):
    """Where a pod is; the first four are the ``queue`` label of scheduler_pending_pods."""

    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    GATED = "gated"
    IN_FLIGHT = "in_flight"


class _Strategy(Enum):
    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


def _ask(hint: HintFn, pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    try:
        return hint(pod, event, old, new)
    except Exception:
        # A hint that fails must not strand the pod: retry it, as kube-scheduler does.
        log.exception("queueing hint failed for %s; retrying the pod", event)
        return True


# kube-scheduler's labels of the queue's own moves (framework/events.go).
POD_ADD = "UnschedulablePodAdd"
POD_UPDATE = "UnschedulablePodUpdate"
ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF = "PopFromBackoffQ"


def incoming_label(event: ClusterEvent, pod: str = "AssignedPod") -> str:
    """kube-scheduler's label of ``event`` in scheduler_queue_incoming_pods_total: a pod's
    update is an ``AssignedPod`` or an ``UnschedulablePod`` one there, and an update with no
    finer bit is plain ``Update``."""
    if event.resource is EventResource.WILDCARD or event.action in (
        ActionType.ADD,
        ActionType.DELETE,
    ):
        return str(event)
    resource = pod if event.resource is EventResource.POD else event.resource.value
    if event.action is ActionType.UPDATE_OTHER:
        return resource + "Update"
    words = (event.action.name or "Update").split("_")
    return resource + "".join(w.capitalize() for w in words)


def _signature(qp: QueuedPod) -> bytes:
    """What a hint may look at: the pod without its name and UID, and its rejectors."""
    pod = qp.pod
    meta = pod.metadata
    return msgspec.json.encode(
        (
            sorted(qp.unschedulable_plugins),
            sorted(qp.pending_plugins),
            meta.namespace,
            meta.labels,
            pod.spec,
        )
    )


def pod_key(pod: Any) -> str:
    """The queue's key of a pod: its UID, or namespace/name for an object without one."""
    meta = pod.metadata
    return meta.uid or f"{meta.namespace}/{meta.name}"


@dataclass(eq=False)
class QueuedPod:
    """A pending pod and its scheduling history; the cycle and binder hand it back."""

    pod: Any
    key: str
    # When the pod entered the queue or last came back after a failed attempt.
    timestamp: float
    # When the pod first became ready to schedule (for the end-to-end SLI).
    initial_attempt_timestamp: float | None = None
    # When it last became ready to pop (activeQ, or a backoff it may leave early), for
    # the queue_wait stage of the latency histograms.
    active_since: float = 0.0
    attempts: int = 0
    unschedulable_count: int = 0
    consecutive_errors: int = 0
    unschedulable_plugins: frozenset[str] = frozenset()
    pending_plugins: frozenset[str] = frozenset()
    gating_plugin: str = ""
    _backoff_expiration: float | None = field(default=None, repr=False)
    _signature: bytes = field(default=b"", repr=False)

    @property
    def priority(self) -> int:
        return self.pod.spec.priority or 0

    @property
    def scheduler_name(self) -> str:
        return str(self.pod.spec.scheduler_name)

    @property
    def name(self) -> str:
        return f"{self.pod.metadata.namespace}/{self.pod.metadata.name}"

    @property
    def rejectors(self) -> frozenset[str]:
        return self.unschedulable_plugins | self.pending_plugins


@dataclass
class _InFlight:
    qp: QueuedPod
    since: int  # index in the event log when the pod was popped
    deleted: bool = False


@dataclass(frozen=True)
class _LoggedEvent:
    event: ClusterEvent
    old: Any
    new: Any
    target: str | None  # only this pod's key, or None for every pod


class SchedulingQueue:
    """activeQ, backoffQ, unschedulable and gated pods, with an injectable clock."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        pod_initial_backoff_seconds: float = 1.0,
        pod_max_backoff_seconds: float = 10.0,
        pod_max_in_unschedulable_seconds: float = DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS,
        queue_sort: str = names.PRIORITY_SORT,
        pre_enqueue: Mapping[str, Iterable[str]] | None = None,
        default_pre_enqueue: Iterable[str] = (names.SCHEDULING_GATES,),
        plugin_events: Mapping[str, tuple[ClusterEvent, ...]] = PLUGIN_EVENTS,
        hints: Mapping[str, HintFn] | None = None,  # None: the plugins' own
        pop_from_backoff: bool = True,
        on_active: Callable[[], None] | None = None,
        pod_api: PodForm | None = None,
    ) -> None:
        self.clock: Clock = clock or MonotonicClock()
        self.initial_backoff = float(pod_initial_backoff_seconds)
        self.max_backoff = float(pod_max_backoff_seconds)
        self.max_in_unschedulable = float(pod_max_in_unschedulable_seconds)
        self._sort_key: SortKey = sort_key_for(queue_sort)
        # For a sort whose keys change with time (QosAware): called at every pop for the
        # key of that moment, and the active pods are ordered anew by it.
        self.key_factory: Callable[[], SortKey] | None = None
        # schedulerName -> the PreEnqueue plugins of that profile.
        self._pre_enqueue = {k: tuple(v) for k, v in (pre_enqueue or {}).items()}
        self._default_pre_enqueue = tuple(default_pre_enqueue)
        self._events = dict(plugin_events)
        self._hints = dict(registry.queueing_hints() if hints is None else hints)
        self._pop_from_backoff = pop_from_backoff
        # A pod version's API dict for the hints and the update events (None: they
        # convert it themselves, each time).
        self.pod_api = pod_api
        # Called whenever pods become ready, so the cycle can wake up.
        self.on_active = on_active
        # Told (queue, event label) for each pod entering a queue (module docstring).
        self.on_incoming: Callable[[str, str], None] | None = None

        self._where: dict[str, QueueName] = {}
        self._seq = itertools.count()
        self._active: list[tuple[tuple[Any, ...], int, str]] = []
        self._active_pods: dict[str, tuple[int, QueuedPod]] = {}
        # Two backoff heaps of (expiry, sort key, seq, key): pods rejected by plugins, and
        # pods that failed for another reason; only the first may be popped early.
        self._backoff: list[tuple[float, tuple[Any, ...], int, str]] = []
        self._error_backoff: list[tuple[float, tuple[Any, ...], int, str]] = []
        self._backoff_pods: dict[str, tuple[int, QueuedPod]] = {}
        # Insertion order is timestamp order: the oldest parked pods come first.
        self._unschedulable: dict[str, QueuedPod] = {}
        # Parked pods grouped by what a hint can see (their shape and rejecting plugins),
        # so that one event is judged once per group, not once per pod: replicas of a
        # workload park together. Each group is listed under each of its plugins.
        self._groups: dict[bytes, dict[str, None]] = {}
        self._groups_by_plugin: dict[str, set[bytes]] = {}
        self._gated: dict[str, QueuedPod] = {}
        # DynamicResources' PreEnqueue: whether a claim of the pod does not exist yet
        # (set by the runtime, which watches the claims; None: never held back for it).
        self.claims_missing: Callable[[Any], bool] | None = None
        self._in_flight: dict[str, _InFlight] = {}
        self._log: list[_LoggedEvent] = []
        self._log_base = 0  # the absolute index of self._log[0]
        # The nominator (kube-scheduler's nominator, kept here as upstream keeps it in its
        # queue): keys of pods whose object carries status.nominatedNodeName, and the
        # nominations this process wrote that the watch has not shown yet (node, or ""
        # for one it cleared). See :meth:`nominated_pods`.
        self._nominated: dict[str, None] = {}
        self._nomination_overrides: dict[str, str] = {}
        # Pods of pod groups: group -> keys of its members the queue holds, and back.
        self._gangs: dict[gang.GroupKey, dict[str, None]] = {}
        self._gang_of: dict[str, gang.GroupKey] = {}

    @classmethod
    def from_config(cls, config: Any, **kwargs: Any) -> SchedulingQueue:
        """A queue set up from a loaded ``SchedulerConfig`` (backoffs, sort, gates)."""
        profiles = config.profiles
        kwargs.setdefault("pod_initial_backoff_seconds", config.pod_initial_backoff_seconds)
        kwargs.setdefault("pod_max_backoff_seconds", config.pod_max_backoff_seconds)
        kwargs.setdefault(
            "pod_max_in_unschedulable_seconds",
            config.kubesalvo.pod_max_in_unschedulable_pods_seconds,
        )
        kwargs.setdefault("queue_sort", profiles[0].queue_sort)
        kwargs.setdefault("pre_enqueue", {p.scheduler_name: p.pre_enqueue for p in profiles})
        return cls(**kwargs)

    # --- what is where ----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, key: object) -> bool:
        return key in self._where

    def where(self, key: str) -> QueueName | None:
        return self._where.get(key)

    def get(self, key: str) -> QueuedPod | None:
        where = self._where.get(key)
        if where is None:
            return None
        if where is QueueName.ACTIVE:
            return self._active_pods[key][1]
        if where is QueueName.BACKOFF:
            return self._backoff_pods[key][1]
        if where is QueueName.UNSCHEDULABLE:
            return self._unschedulable[key]
        if where is QueueName.GATED:
            return self._gated[key]
        return self._in_flight[key].qp

    def pending_counts(self) -> dict[str, int]:
        """Pods per queue, for ``scheduler_pending_pods{queue=...}``; O(1)."""
        return {
            QueueName.ACTIVE.value: len(self._active_pods),
            QueueName.BACKOFF.value: len(self._backoff_pods),
            QueueName.UNSCHEDULABLE.value: len(self._unschedulable),
            QueueName.GATED.value: len(self._gated),
        }

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def listing(self) -> list[tuple[str, QueueName, QueuedPod]]:
        """Every pod with its place (for /debug/queue); active pods in pop order."""
        out = [(qp.name, QueueName.ACTIVE, qp) for _, _, qp in self._ordered_active()]
        for where, pods in (
            (QueueName.BACKOFF, (qp for _, qp in self._backoff_pods.values())),
            (QueueName.UNSCHEDULABLE, self._unschedulable.values()),
            (QueueName.GATED, self._gated.values()),
            (QueueName.IN_FLIGHT, (f.qp for f in self._in_flight.values())),
        ):
            out.extend((qp.name, where, qp) for qp in pods)
        return out

    def unordered_listing(self) -> Iterator[tuple[QueueName, QueuedPod]]:
        """Every pod's place, as ``listing`` but without ordering the active pods (which
        computes every pod's sort key) or naming them: for views that show a bounded part
        of a large queue from the event loop. Consume it without awaiting in between."""
        for _, qp in self._active_pods.values():
            yield QueueName.ACTIVE, qp
        for _, qp in self._backoff_pods.values():
            yield QueueName.BACKOFF, qp
        for qp in self._unschedulable.values():
            yield QueueName.UNSCHEDULABLE, qp
        for qp in self._gated.values():
            yield QueueName.GATED, qp
        for flight in self._in_flight.values():
            yield QueueName.IN_FLIGHT, flight.qp

    # --- pods appearing, changing, going ------------------------------------------------

    def add(self, pod: Any) -> None:
        """A new unassigned pod for one of our profiles."""
        key = pod_key(pod)
        if key in self._where:
            self.update(None, pod)
            return
        self._note_nomination(key, None, pod)
        self._track_gang(key, pod)
        self._to_active(QueuedPod(pod, key, self.clock.now()), POD_ADD)

    def update(self, old: Any | None, new: Any) -> None:
        """An unassigned pod changed; a parked pod moves if the change could help it."""
        key = pod_key(new)
        self._note_nomination(key, old, new)
        self._track_gang(key, new)
        where = self._where.get(key)
        if where is None:
            self._to_active(QueuedPod(new, key, self.clock.now()), POD_UPDATE)
            return
        events = pod_update_events(old, new, self.pod_api) if old is not None else []
        if where is QueueName.IN_FLIGHT:
            flight = self._in_flight[key]
            flight.qp.pod = new
            flight.deleted = False  # seen again: it exists after all
            # Judged when the attempt comes back, against the pod's rejecting plugins.
            for event in events:
                self._log.append(_LoggedEvent(event, old, new, key))
            return
        if where is QueueName.ACTIVE:
            _, qp = self._active_pods[key]
            before = self._sort_key(qp)
            qp.pod = new
            if self._sort_key(qp) != before:
                self._push_active(qp)  # a new place; the old heap entry goes stale
            return
        if where is QueueName.BACKOFF:
            self._backoff_pods[key][1].pod = new
            return
        if where is QueueName.GATED:
            qp = self._gated.pop(key)
            del self._where[key]
            qp.pod = new
            # Gated again if a gate remains (counted once, when it was first held back).
            self._to_active(qp, self._gate_update_label(events), count_gated=False)
            return
        # A parked pod. Its new object may belong to another group; its place in the
        # parking order (by timestamp) stays.
        qp = self._unschedulable[key]
        self._ungroup(qp)
        qp.pod = new
        for event in events:
            strategy = self._worth_requeuing(qp, event, old, new)
            if strategy is not _Strategy.SKIP:
                del self._unschedulable[key]
                del self._where[key]
                self._requeue(qp, strategy, incoming_label(event, "UnschedulablePod"))
                return
        self._group(qp)

    def delete(self, pod_or_key: Any) -> None:
        """The pod is gone (deleted, or now bound by someone): forget it."""
        key = pod_or_key if isinstance(pod_or_key, str) else pod_key(pod_or_key)
        where = self._where.get(key)
        if where is None:
            return
        if where is QueueName.IN_FLIGHT:
            # Its attempt is still running; drop the pod when the attempt reports back.
            self._in_flight[key].deleted = True
            return
        del self._where[key]
        self._untrack_gang(key)
        if where is QueueName.ACTIVE:
            del self._active_pods[key]  # its heap entry goes stale
        elif where is QueueName.BACKOFF:
            del self._backoff_pods[key]
        elif where is QueueName.UNSCHEDULABLE:
            self._drop_unschedulable(key)
        else:
            del self._gated[key]

    def activate(self, keys: Iterable[str]) -> None:
        """Move parked or backing-off pods to activeQ now (e.g. a gang completed)."""
        for key in keys:
            where = self._where.get(key)
            if where is QueueName.UNSCHEDULABLE:
                self._to_active(self._remove_unschedulable(key), str(FORCE_ACTIVATE))
            elif where is QueueName.BACKOFF:
                self._to_active(self._remove_backoff(key), str(FORCE_ACTIVATE))
            elif where is QueueName.IN_FLIGHT:
                self._log.append(_LoggedEvent(FORCE_ACTIVATE, None, None, key))

    def retry_after_backoff(self, keys: Iterable[str]) -> None:
        """Move parked pods to backoffQ (activeQ once their backoff is over): a rejected
        gang is retried with backoff rather than only on a cluster event."""
        for key in keys:
            if self._where.get(key) is QueueName.UNSCHEDULABLE:
                # A plugin's move, as upstream's plugins activate pods: ForceActivate.
                self._requeue(
                    self._remove_unschedulable(key), _Strategy.AFTER_BACKOFF, str(FORCE_ACTIVATE)
                )

    # --- nominations ----------------------------------------------------------------------

    def nominate(self, key: str, node: str) -> None:
        """Record a nomination this process has just written (``""``: cleared), before the
        watch shows it: from now on it is the pod's nomination."""
        self._nomination_overrides[key] = node

    def nomination(self, qp: QueuedPod) -> str:
        """The node the pod is nominated to ("" for none): what this process wrote last
        if the watch has not shown it yet, else the pod's ``status.nominatedNodeName``."""
        override = self._nomination_overrides.get(qp.key)
        if override is not None:
            return override
        return str(qp.pod.status.nominated_node_name or "")

    def nominated_pods(self) -> list[tuple[QueuedPod, str]]:
        """Every pod the queue holds (in flight included) with a nomination, and its node.

        Pods that left the queue (bound, deleted) and nominations the watch has caught up
        with are forgotten on the way, so the cost follows the nominated pods only.
        """
        found: list[tuple[QueuedPod, str]] = []
        for key in list(self._nominated.keys() | self._nomination_overrides.keys()):
            qp = self.get(key)
            if qp is None:
                self._nominated.pop(key, None)
                self._nomination_overrides.pop(key, None)
                continue
            status = str(qp.pod.status.nominated_node_name or "")
            if not status:
                self._nominated.pop(key, None)
            override = self._nomination_overrides.get(key)
            if override is not None and override == status:
                del self._nomination_overrides[key]  # the watch shows it now
            node = status if override is None else override
            if node:
                found.append((qp, node))
        return found

    def _note_nomination(self, key: str, old: Any | None, new: Any) -> None:
        """Follow a pod's nomination through its updates, as upstream's nominator does: an
        update that carries a nomination, or drops one, is the truth from then on; an
        update without one on either side (a late event from before our write) keeps the
        nomination this process wrote."""
        node = new.status.nominated_node_name
        if node or (old is not None and old.status.nominated_node_name):
            self._nomination_overrides.pop(key, None)
        if node:
            self._nominated[key] = None

    # --- cluster events -----------------------------------------------------------------

    def on_event(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pod_filter: Callable[[QueuedPod], bool] | None = None,
    ) -> int:
        """A cluster event (node added or changed, assigned pod added or gone, ...).

        Parked pods whose rejecting plugins registered a matching event move to backoffQ
        or activeQ; ``pod_filter`` narrows the candidates further (for example to pods
        whose affinity terms match an added pod). Returns how many pods moved.
        """
        if self._in_flight:
            self._log.append(_LoggedEvent(event, old, new, None))
        if event.resource is EventResource.WILDCARD:
            groups = list(self._groups)
        else:
            wanted: set[bytes] = set()
            for plugin, signatures in self._groups_by_plugin.items():
                if signatures and self._registered(plugin, event):
                    wanted |= signatures
            groups = [g for g in self._groups if g in wanted] if wanted else []
        moved = 0
        label = incoming_label(event)
        for signature in groups:
            keys = list(self._groups[signature])
            # Every pod of a group gets the same answer; ask with the first one.
            strategy = self._worth_requeuing(self._unschedulable[keys[0]], event, old, new)
            if strategy is _Strategy.SKIP:
                continue
            for key in keys:
                qp = self._unschedulable[key]
                if pod_filter is not None and not pod_filter(qp):
                    continue
                self._remove_unschedulable(key)
                self._requeue(qp, strategy, label)
                moved += 1
        return moved

    # --- the cycle ----------------------------------------------------------------------

    def pop_burst(self, max_pods: int) -> list[QueuedPod]:
        """Up to ``max_pods`` ready pods in queue order, now in flight."""
        self.flush()
        if self.key_factory is not None:
            self._sort_key = self.key_factory()
            self._active = [
                (self._sort_key(qp), seq, key) for key, (seq, qp) in self._active_pods.items()
            ]
            heapq.heapify(self._active)
        burst: list[QueuedPod] = []
        while self._active and len(burst) < max_pods:
            _, seq, key = heapq.heappop(self._active)
            entry = self._active_pods.get(key)
            if entry is None or entry[0] != seq:
                continue  # stale: the pod was deleted, updated or moved
            del self._active_pods[key]
            burst.append(entry[1])
        if self._pop_from_backoff:
            active = len(burst)
            while self._backoff and len(burst) < max_pods:
                _, _, seq, key = heapq.heappop(self._backoff)
                entry = self._backoff_pods.get(key)
                if entry is None or entry[0] != seq:
                    continue
                del self._backoff_pods[key]
                burst.append(entry[1])
                self._incoming(QueueName.ACTIVE, POP_FROM_BACKOFF)
            if active and len(burst) > active:
                # One burst in queue order: a high-priority pod back early from backoff
                # (a preemptor whose victims are gone) goes before the active pods of
                # lower priority, as if it had returned to activeQ, instead of after
                # them, where they could take the room it made.
                burst.sort(key=self._sort_key)
        if self._gangs:
            self._pull_gangs(burst)
        since = self._log_base + len(self._log)
        for qp in burst:
            qp.attempts += 1
            self._where[qp.key] = QueueName.IN_FLIGHT
            self._in_flight[qp.key] = _InFlight(qp, since)
        return burst

    def done(self, key: str) -> None:
        """The pod's attempt ended in a placement (bound, or being bound by someone)."""
        if self._in_flight.pop(key, None) is not None:
            del self._where[key]
            self._untrack_gang(key)
            self._prune_log()

    def add_unschedulable(
        self,
        qp: QueuedPod,
        plugins: Iterable[str] = (),
        pending_plugins: Iterable[str] = (),
    ) -> QueueName | None:
        """A popped pod failed: ``plugins`` rejected it (none: an error, e.g. a failed
        bind). Returns where it went, or None if it was deleted meanwhile."""
        flight = self._in_flight.pop(qp.key, None)
        if flight is None and qp.key in self._where:
            raise ValueError(f"pod {qp.name} is already queued ({self._where[qp.key]})")
        since = flight.since if flight is not None else self._log_base + len(self._log)
        if flight is not None:
            del self._where[qp.key]
            qp = flight.qp  # carries the newest object seen while in flight
            if flight.deleted:
                self._untrack_gang(qp.key)
                self._prune_log()
                return None
        qp.unschedulable_plugins = frozenset(plugins)
        qp.pending_plugins = frozenset(pending_plugins)
        if qp.rejectors:
            qp.unschedulable_count += 1
            qp.consecutive_errors = 0
        else:
            qp.consecutive_errors += 1
        qp.timestamp = self.clock.now()
        qp._backoff_expiration = None
        strategy = self._in_flight_strategy(qp, since)
        self._prune_log()
        return self._requeue(qp, strategy, ATTEMPT_FAILURE)

    def flush(self) -> None:
        """Move pods whose backoff is over to activeQ, and retry pods parked too long."""
        now = self.clock.now()
        for heap in (self._backoff, self._error_backoff):
            while heap and heap[0][0] <= now:
                _, _, seq, key = heapq.heappop(heap)
                entry = self._backoff_pods.get(key)
                if entry is None or entry[0] != seq:
                    continue
                del self._backoff_pods[key]
                del self._where[key]
                self._to_active(entry[1], BACKOFF_COMPLETE)
        deadline = now - self.max_in_unschedulable
        stale = []
        for key, qp in self._unschedulable.items():
            if qp.timestamp >= deadline:
                break
            stale.append(key)
        for key in stale:
            qp = self._remove_unschedulable(key)
            strategy = self._worth_requeuing(qp, UNSCHEDULABLE_TIMEOUT, None, None)
            self._requeue(qp, strategy, str(UNSCHEDULABLE_TIMEOUT))

    def next_wakeup(self) -> float | None:
        """The clock time of the next backoff expiry or unschedulable timeout, if any."""
        times = []
        for heap in (self._backoff, self._error_backoff):
            while heap and (
                heap[0][3] not in self._backoff_pods
                or self._backoff_pods[heap[0][3]][0] != heap[0][2]
            ):
                heapq.heappop(heap)  # drop stale heads so they do not wake anyone
            if heap:
                times.append(heap[0][0])
        if self._unschedulable:
            oldest = next(iter(self._unschedulable.values()))
            times.append(oldest.timestamp + self.max_in_unschedulable)
        return min(times) if times else None

    def backoff_seconds(self, qp: QueuedPod) -> float:
        """The backoff of the pod's latest failure (0 if it never failed)."""
        count = qp.consecutive_errors or qp.unschedulable_count
        if count == 0:
            return 0.0
        # Doubling stops at the cap; the exponent is bounded to avoid huge numbers.
        return min(self.initial_backoff * 2.0 ** min(count - 1, 62), self.max_backoff)

    def backoff_expiration(self, qp: QueuedPod) -> float | None:
        if qp._backoff_expiration is None and (qp.consecutive_errors or qp.unschedulable_count):
            qp._backoff_expiration = qp.timestamp + self.backoff_seconds(qp)
        return qp._backoff_expiration

    def is_backing_off(self, qp: QueuedPod) -> bool:
        expiration = self.backoff_expiration(qp)
        return expiration is not None and self.clock.now() < expiration

    # --- gangs --------------------------------------------------------------------------

    def gang_members(self, group: gang.GroupKey) -> dict[str, QueueName]:
        """The members of ``group`` the queue holds, with where each one is."""
        return {key: self._where[key] for key in self._gangs.get(group, ())}

    def _track_gang(self, key: str, pod: Any) -> None:
        group = gang_of(pod)
        if self._gang_of.get(key) == group:
            return
        self._untrack_gang(key)
        if group is not None:
            self._gang_of[key] = group
            self._gangs.setdefault(group, {})[key] = None

    def _untrack_gang(self, key: str) -> None:
        group = self._gang_of.pop(key, None)
        if group is None:
            return
        members = self._gangs[group]
        del members[key]
        if not members:
            del self._gangs[group]

    def _pull_gangs(self, burst: list[QueuedPod]) -> None:
        """Add to ``burst`` every waiting sibling of the gang members in it (activeQ,
        backoffQ or parked; a gated member stays gated), after the members popped."""
        taken = {qp.key for qp in burst}
        groups = dict.fromkeys(self._gang_of[qp.key] for qp in burst if qp.key in self._gang_of)
        for group in groups:
            for key in list(self._gangs.get(group, ())):
                if key in taken:
                    continue
                where = self._where[key]
                if where is QueueName.ACTIVE:
                    _, qp = self._active_pods.pop(key)  # its heap entry goes stale
                    del self._where[key]
                elif where is QueueName.BACKOFF:
                    qp = self._remove_backoff(key)
                elif where is QueueName.UNSCHEDULABLE:
                    qp = self._remove_unschedulable(key)
                else:
                    continue
                taken.add(key)
                burst.append(qp)

    # --- internals ----------------------------------------------------------------------

    def _ordered_active(self) -> list[tuple[tuple[Any, ...], int, QueuedPod]]:
        return sorted((self._sort_key(qp), seq, qp) for seq, qp in self._active_pods.values())

    def _gate(self, qp: QueuedPod) -> str:
        """The first PreEnqueue plugin of the pod's profile that holds it back, or ""."""
        plugins = self._pre_enqueue.get(qp.scheduler_name, self._default_pre_enqueue)
        # SchedulingGates, and DynamicResources (a claim of the pod is not there yet);
        # DefaultPreemption's waits for async preemption, which kubesalvo does not have.
        if names.SCHEDULING_GATES in plugins and qp.pod.spec.scheduling_gates:
            return names.SCHEDULING_GATES
        if (
            qp.pod.spec.resource_claims
            and self.claims_missing is not None
            and names.DYNAMIC_RESOURCES in plugins
            and self.claims_missing(qp.pod)
        ):
            return names.DYNAMIC_RESOURCES
        return ""

    def release_gated(
        self, plugin: str, event: str = str(FORCE_ACTIVATE), keys: Iterable[str] | None = None
    ) -> int:
        """Check again the pods ``plugin`` holds back (something they waited for may have
        come: ``event``, the label of what came), or only those of them with these
        ``keys`` (the ones waiting for what came: a burst of 6,000 claims made one by one
        must not check 6,000 gated pods each); returns how many moved to activeQ."""
        moved = 0
        found = self._gated.items() if keys is None else ((k, self._gated.get(k)) for k in keys)
        for key in [k for k, qp in found if qp is not None and qp.gating_plugin == plugin]:
            qp = self._gated.pop(key)
            del self._where[key]
            moved += self._to_active(qp, event, count_gated=False)
        return moved

    def _incoming(self, queue: QueueName, event: str) -> None:
        if self.on_incoming is not None:
            # Gated pods are among upstream's unschedulable pods.
            name = QueueName.UNSCHEDULABLE if queue is QueueName.GATED else queue
            self.on_incoming(name.value, event)

    @staticmethod
    def _gate_update_label(events: list[ClusterEvent]) -> str:
        """The label of the update that may release a gated pod: its gates' removal if it
        is among the update's events (SchedulingGates registers only that one)."""
        for event in events:
            if event.action is ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED:
                return incoming_label(event, "UnschedulablePod")
        return incoming_label(events[0], "UnschedulablePod") if events else POD_UPDATE

    def _to_active(self, qp: QueuedPod, event: str, *, count_gated: bool = True) -> bool:
        gate = self._gate(qp)
        if gate:
            qp.gating_plugin = gate
            self._where[qp.key] = QueueName.GATED
            self._gated[qp.key] = qp
            if count_gated:
                self._incoming(QueueName.GATED, event)
            return False
        qp.gating_plugin = ""
        qp.active_since = self.clock.now()
        if qp.initial_attempt_timestamp is None:
            qp.initial_attempt_timestamp = qp.active_since
        self._push_active(qp)
        self._incoming(QueueName.ACTIVE, event)
        if self.on_active is not None:
            self.on_active()
        return True

    def _push_active(self, qp: QueuedPod) -> None:
        seq = next(self._seq)
        self._where[qp.key] = QueueName.ACTIVE
        self._active_pods[qp.key] = (seq, qp)
        heapq.heappush(self._active, (self._sort_key(qp), seq, qp.key))

    def _to_backoff(self, qp: QueuedPod, event: str) -> QueueName:
        # Gates are checked on the way in, since a pod may leave backoffQ by an early pop.
        gate = self._gate(qp)
        if gate:
            qp.gating_plugin = gate
            self._where[qp.key] = QueueName.GATED
            self._gated[qp.key] = qp
            self._incoming(QueueName.GATED, event)
            return QueueName.GATED
        seq = next(self._seq)
        expiration = self.backoff_expiration(qp)
        if expiration is None:
            expiration = self.clock.now()
        heap = self._backoff if qp.rejectors else self._error_backoff
        heapq.heappush(heap, (expiration, self._sort_key(qp), seq, qp.key))
        self._where[qp.key] = QueueName.BACKOFF
        self._backoff_pods[qp.key] = (seq, qp)
        self._incoming(QueueName.BACKOFF, event)
        if self._pop_from_backoff and qp.rejectors:
            qp.active_since = self.clock.now()
            if self.on_active is not None:
                self.on_active()
        return QueueName.BACKOFF

    def _remove_backoff(self, key: str) -> QueuedPod:
        _, qp = self._backoff_pods.pop(key)
        del self._where[key]
        return qp

    def _park(self, qp: QueuedPod, event: str) -> QueueName:
        self._where[qp.key] = QueueName.UNSCHEDULABLE
        self._unschedulable[qp.key] = qp
        self._group(qp)
        self._incoming(QueueName.UNSCHEDULABLE, event)
        return QueueName.UNSCHEDULABLE

    def _group(self, qp: QueuedPod) -> None:
        signature = qp._signature = _signature(qp)
        group = self._groups.get(signature)
        if group is None:
            group = self._groups[signature] = {}
            for plugin in qp.rejectors:
                self._groups_by_plugin.setdefault(plugin, set()).add(signature)
        group[qp.key] = None

    def _ungroup(self, qp: QueuedPod) -> None:
        group = self._groups[qp._signature]
        del group[qp.key]
        if not group:
            del self._groups[qp._signature]
            for plugin in qp.rejectors:
                self._groups_by_plugin[plugin].discard(qp._signature)

    def _drop_unschedulable(self, key: str) -> QueuedPod:
        qp = self._unschedulable.pop(key)
        self._ungroup(qp)
        return qp

    def _remove_unschedulable(self, key: str) -> QueuedPod:
        del self._where[key]
        return self._drop_unschedulable(key)

    def _requeue(self, qp: QueuedPod, strategy: _Strategy, event: str) -> QueueName:
        if strategy is _Strategy.SKIP:
            return self._park(qp, event)
        if strategy is _Strategy.AFTER_BACKOFF and self.is_backing_off(qp):
            return self._to_backoff(qp, event)
        return QueueName.ACTIVE if self._to_active(qp, event) else QueueName.GATED

    def _registered(self, plugin: str, event: ClusterEvent) -> bool:
        registered = self._events.get(plugin)
        # A plugin that registers nothing is retried on every event, as upstream does
        # for plugins without EnqueueExtensions.
        return registered is None or any(event.matches(r) for r in registered)

    def _worth_requeuing(self, qp: QueuedPod, event: ClusterEvent, old: Any, new: Any) -> _Strategy:
        if not qp.rejectors or event.resource is EventResource.WILDCARD:
            return _Strategy.AFTER_BACKOFF
        with pod_forms(self.pod_api):
            return self._hints_say(qp, event, old, new)

    def _hints_say(self, qp: QueuedPod, event: ClusterEvent, old: Any, new: Any) -> _Strategy:
        strategy = _Strategy.SKIP
        for plugin in sorted(qp.rejectors):
            if not self._registered(plugin, event):
                continue
            hint = self._hints.get(plugin)
            if hint is not None and not _ask(hint, qp.pod, event, old, new):
                continue
            if plugin in qp.pending_plugins:
                return _Strategy.IMMEDIATELY
            strategy = _Strategy.AFTER_BACKOFF
        return strategy

    def _in_flight_strategy(self, qp: QueuedPod, since: int) -> _Strategy:
        """What the events seen during the pod's attempt say about retrying it."""
        if not qp.rejectors:
            return _Strategy.AFTER_BACKOFF
        strategy = _Strategy.SKIP
        for logged in self._log[max(since - self._log_base, 0) :]:
            if logged.target is not None and logged.target != qp.key:
                continue
            found = self._worth_requeuing(qp, logged.event, logged.old, logged.new)
            if found is _Strategy.IMMEDIATELY:
                return found
            if found is _Strategy.AFTER_BACKOFF:
                strategy = found
        return strategy

    def _prune_log(self) -> None:
        """Forget the events older than every attempt still in flight."""
        if not self._log:
            return
        if not self._in_flight:
            self._log_base += len(self._log)
            self._log.clear()
            return
        # Attempts enter _in_flight in the order they were popped, with the log's length
        # at that time, and a pod in flight is never popped again: the first is the oldest
        # (a min over every attempt here made a 10,000-pod burst's binds quadratic).
        oldest = next(iter(self._in_flight.values())).since
        drop = oldest - self._log_base
        if drop > 0:
            del self._log[:drop]
            self._log_base = oldest
