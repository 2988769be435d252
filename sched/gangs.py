"""The gangs the runtime knows: members, PodGroups, waiting timers and PodGroup status.

Coscheduling's runtime half (the decisions are ``core/plugins/coscheduling.py``, the
all-or-nothing placement is the kernel's). :class:`GangBook` is fed from the watches:

* every pod of a pod group (pending or bound; finished pods leave, as the pod watch
  reports them deleted), so that a gang's members bound earlier (before a fault, a
  restart, or by a previous burst) count towards its minimum;
* PodGroup objects when the CRD is installed (``informers.podgroups``): their
  ``minMember`` wins over the ``minAvailable`` label, their ``scheduleTimeoutSeconds``
  over the ``permitWaitingTimeSeconds`` arg. While they are watched, a pod whose
  ``scheduling.x-k8s.io/pod-group`` label names a PodGroup not seen yet (and that has no
  ``minAvailable`` label) waits for it: created together, the pod may come first.

The cycle asks :meth:`GangBook.admit` before each burst which gangs may be placed, and
how many members each still needs; the rest wait (holding no room) or, past their
timeout, are rejected. :meth:`expired` lists the waiting gangs whose timeout passed, so
the cycle can bring their members back for the rejection at once. :meth:`status_patches`
gives the PodGroup status changes to write (phase, scheduled, running,
scheduleStartTime; the runtime writes them while it leads).

``install`` wires the book to the runtime through the plugin handle
(``sched/plugin_handle.py``): every pod change, and, when the API server serves the
PodGroup CRD (asked once, at start), a PodGroup watch and the status writes; and
:class:`GangCollector` shows the book on /metrics (gangs waiting, their pods pending and
bound, the PreFilter's verdicts).

Event-loop only, like the queue.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from kubesalvo.core.plugins.coscheduling import (
    CoschedulingArgs,
    GangCheck,
    Verdict,
    check_gang,
    gang,
    short_of,
)
from kubesalvo.core.plugins.coscheduling.gang import gang_of
from kubesalvo.core.plugins.names import COSCHEDULING
from kubesalvo.sched.client import ApiClient, ApiError
from kubesalvo.sched.events import rfc3339
from kubesalvo.sched.informers import DELETED, SYNCED, Change, podgroups, to_api_dict
from kubesalvo.sched.informers.models import Pod
from kubesalvo.sched.plugin_handle import PluginHandle
from kubesalvo.sched.queue import QueuedPod, QueueName, SchedulingQueue, pod_key

__all__ = ["Admission", "GangBook", "GangCollector", "PodGroupPhase", "install", "write_statuses"]

log = logging.getLogger(__name__)


class PodGroupPhase:
    """scheduler-plugins' PodGroup phases that kubesalvo writes."""

    PENDING = "Pending"  # fewer than minMember members exist
    SCHEDULING = "Scheduling"  # enough exist, fewer than minMember are bound
    SCHEDULED = "Scheduled"  # minMember or more are bound
    RUNNING = "Running"  # minMember or more are running


@dataclass
class _Member:
    node: str = ""
    running: bool = False


@dataclass
class Admission:
    """The PreFilter's answer for a burst."""

    # per pod group in the burst that may be placed: how many of its pods in the burst
    # must be placed for any to stay (the kernel's minimum)
    needed: dict[gang.GroupKey, int] = field(default_factory=dict)
    # burst index -> the text of a member that is not tried (waiting or rejected)
    refused: dict[int, str] = field(default_factory=dict)
    # the groups rejected for their timeout in this burst (their members back off)
    timed_out: set[gang.GroupKey] = field(default_factory=set)


def _names_pod_group(pod: Mapping[str, Any]) -> bool:
    """Whether the pod's group comes from scheduler-plugins' label (a PodGroup's name)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return not labels.get(gang.GROUP_LABELS[0]) and bool(labels.get(gang.POD_GROUP_LABEL))


def _declared_minimum(pods: Iterable[Mapping[str, Any]]) -> int | None:
    """The first ``minAvailable`` label among a gang's pods (queue order), if any."""
    for pod in pods:
        value = gang.min_available(pod)  # malformed ones are refused before
        if value is not None:
            return value
    return None


class GangBook:
    """Members, PodGroups and waiting timers of every gang (see the module docstring)."""

    name = COSCHEDULING  # the plugin whose cycle part it is (BurstCycle.plugin_parts)

    def __init__(
        self,
        queue: SchedulingQueue,
        is_assumed: Callable[[str], bool] = lambda key: False,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.queue = queue
        self.is_assumed = is_assumed
        self.clock = clock
        self.wall_clock = wall_clock
        self.members: dict[gang.GroupKey, dict[str, _Member]] = {}
        self._member_of: dict[str, gang.GroupKey] = {}
        # PodGroup objects: their spec as core reads it, and the object (for its status).
        self.specs: dict[gang.GroupKey, gang.PodGroupSpec] = {}
        self.pod_groups: dict[gang.GroupKey, Any] = {}
        # When each waiting gang started waiting, with its timeout; gangs in podGroup backoff.
        self._waiting: dict[gang.GroupKey, tuple[float, float]] = {}
        self._backoff_until: dict[gang.GroupKey, float] = {}
        self._dirty: set[gang.GroupKey] = set()
        # True once PodGroups are watched (the CRD is served).
        self.watching_pod_groups = False
        # scheduleStartTime written or to write, per PodGroup (RFC 3339).
        self._started: dict[gang.GroupKey, str] = {}
        # The PreFilter's verdicts so far, one per gang per burst (for /metrics).
        self.verdicts: dict[str, int] = {v.name.lower(): 0 for v in Verdict}

    # --- the watches --------------------------------------------------------------------

    def pod_changed(self, key: str, pod: Any | None) -> None:
        """A pod was added or changed (``pod``, the informers' model) or deleted (None)."""
        group = None
        if pod is not None and not pod.metadata.deletion_timestamp:
            group = gang_of(pod)
        before = self._member_of.get(key)
        if before is not None and before != group:
            members = self.members[before]
            del members[key]
            del self._member_of[key]
            self._dirty.add(before)
            if not members:
                self._forget(before)
        if group is None or pod is None:
            return
        self._member_of[key] = group
        member = self.members.setdefault(group, {}).setdefault(key, _Member())
        member.node = pod.spec.node_name or ""
        member.running = pod.status.phase == "Running"
        self._dirty.add(group)

    def _forget(self, group: gang.GroupKey) -> None:
        del self.members[group]
        self._waiting.pop(group, None)
        self._backoff_until.pop(group, None)
        if group not in self.pod_groups:
            self._dirty.discard(group)
            self._started.pop(group, None)

    def pod_group_changed(self, obj: Any | None, namespace: str, name: str) -> None:
        """A PodGroup object was added or changed (``obj``, a dict) or deleted (None)."""
        group = gang.GroupKey(namespace or "default", name)
        if obj is None:
            self.specs.pop(group, None)
            self.pod_groups.pop(group, None)
            self._started.pop(group, None)
            self._dirty.discard(group)
            return
        try:
            self.specs[group] = gang.pod_group_spec(obj)
        except ValueError as error:
            log.warning("PodGroup %s ignored: %s", group, error)
            self.specs.pop(group, None)
        if group not in self.pod_groups:
            # Members that waited for it come back now.
            self.queue.activate(self.queue.gang_members(group))
        self.pod_groups[group] = obj
        started = (obj.get("status") or {}).get("scheduleStartTime")
        if started:
            self._started[group] = started
        self._dirty.add(group)

    # --- counting -----------------------------------------------------------------------

    def bound(self, group: gang.GroupKey) -> int:
        """Members bound (the watch shows a node) or being bound (assumed by us)."""
        return sum(
            1 for key, m in self.members.get(group, {}).items() if m.node or self.is_assumed(key)
        )

    def pending(self, group: gang.GroupKey) -> int:
        """Members waiting in the queue or in flight; gated ones cannot be tried."""
        return sum(
            1 for where in self.queue.gang_members(group).values() if where is not QueueName.GATED
        )

    def minimum(self, group: gang.GroupKey, labelled: int) -> int:
        spec = self.specs.get(group)
        return spec.min_member if spec is not None else labelled

    def timeout(self, group: gang.GroupKey, args: CoschedulingArgs) -> float:
        spec = self.specs.get(group)
        if spec is not None and spec.timeout_seconds is not None:
            return float(spec.timeout_seconds)  # the PodGroup's own timeout wins
        return float(args.permit_waiting_time_seconds)

    # --- the PreFilter ------------------------------------------------------------------

    def admit(
        self,
        pods: list[QueuedPod],
        objects: Sequence[Mapping[str, Any]],
        args: CoschedulingArgs,
        free: Callable[[], Mapping[str, int]] | None = None,
    ) -> Admission:
        """Which gangs of a burst may be placed (``objects``: the pods' API dicts, in
        burst order; ``free``: gives the free room of all nodes together, per resource, asked
        only for a PodGroup with minResources)."""
        answer = Admission()
        groups: dict[gang.GroupKey, list[int]] = {}
        for i, qp in enumerate(pods):
            group = gang_of(qp.pod)
            if group is not None:
                groups.setdefault(group, []).append(i)
        if not groups:
            return answer
        now = self.clock()
        for group, indices in groups.items():
            malformed = gang.malformed_minimum(objects[i] for i in indices)
            if malformed:
                # Refused here: the kernel's path would fail the whole burst on it.
                for i in indices:
                    answer.refused[i] = f"pod group {group}: {malformed}"
                continue
            declared = _declared_minimum(objects[i] for i in indices)
            if declared is None and group not in self.specs:
                if self.watching_pod_groups and _names_pod_group(objects[indices[0]]):
                    for i in indices:
                        answer.refused[i] = f"PodGroup {group} not found (waiting for it)"
                continue  # no minimum: the kernel places every member of the burst or none
            minimum = self.minimum(group, declared or 0)
            timeout = self.timeout(group, args)
            since, _ = self._waiting.get(group, (now, timeout))
            check = GangCheck(
                str(group), minimum, self.pending(group), self.bound(group), now - since, timeout
            )
            verdict, text = check_gang(check)
            until = self._backoff_until.get(group)
            if verdict is Verdict.PLACE and until is not None and now < until:
                verdict = Verdict.WAIT
                text = (
                    f"pod group {group} was rejected {args.pod_group_backoff_seconds}s ago "
                    f"and is backing off for {until - now:.0f}s more"
                )
            spec = self.specs.get(group)
            if verdict is Verdict.PLACE and spec is not None and spec.min_resources:
                missing = short_of(spec.min_resources, free() if free is not None else {})
                if missing:
                    verdict = Verdict.SHORT
                    text = (
                        f"pod group {group}: its minResources exceed the free room of the "
                        f"cluster ({', '.join(missing)})"
                    )
            self.verdicts[verdict.name.lower()] += 1
            if verdict is Verdict.PLACE:
                self._waiting.pop(group, None)
                answer.needed[group] = check.needed
                self._start(group)
                continue
            for i in indices:
                answer.refused[i] = text
            if verdict is Verdict.TIMED_OUT:
                self._waiting.pop(group, None)
                answer.timed_out.add(group)
                if args.pod_group_backoff_seconds:
                    self._backoff_until[group] = now + args.pod_group_backoff_seconds
            elif verdict is Verdict.WAIT and group not in self._waiting:
                self._waiting[group] = (now, timeout)
        return answer

    def expired(self) -> list[tuple[gang.GroupKey, list[str]]]:
        """Waiting gangs whose timeout has passed, with their members' queue keys."""
        now = self.clock()
        found = []
        for group, (since, timeout) in self._waiting.items():
            if now - since >= timeout:
                found.append((group, list(self.queue.gang_members(group))))
        return found

    def waiting(self, group: gang.GroupKey) -> tuple[float, float] | None:
        """(seconds waited, timeout) of a waiting gang, else None (for ``explain``)."""
        entry = self._waiting.get(group)
        if entry is None:
            return None
        return self.clock() - entry[0], entry[1]

    def describe(self, group: gang.GroupKey, labelled: int | None) -> dict[str, Any]:
        """The gang's state as ``explain`` shows it."""
        minimum = self.minimum(group, labelled or 0)
        state: dict[str, Any] = {
            "group": str(group),
            "minAvailable": minimum or None,
            "minimumFrom": "PodGroup" if group in self.specs else "label",
            "members": len(self.members.get(group, {})),
            "pending": self.pending(group),
            "bound": self.bound(group),
        }
        waited = self.waiting(group)
        if waited is not None:
            state["waitingSeconds"] = round(waited[0], 1)
            state["timeoutSeconds"] = waited[1]
        if group in self.pod_groups:
            state["podGroupPhase"] = self._phase(group, minimum)
        return state

    # --- PodGroup status ------------------------------------------------------------------

    def _start(self, group: gang.GroupKey) -> None:
        if group in self.pod_groups and group not in self._started:
            self._started[group] = rfc3339(self.wall_clock())
            self._dirty.add(group)

    def _phase(self, group: gang.GroupKey, minimum: int) -> str:
        members = self.members.get(group, {})
        if sum(1 for m in members.values() if m.running) >= minimum:
            return PodGroupPhase.RUNNING
        if self.bound(group) >= minimum:
            return PodGroupPhase.SCHEDULED
        if len(members) >= minimum:
            return PodGroupPhase.SCHEDULING
        return PodGroupPhase.PENDING

    def status_patches(self) -> list[tuple[gang.GroupKey, dict[str, Any]]]:
        """The PodGroup statuses that differ from what the objects show, as merge patches
        of ``status``; the groups are clean afterwards (a failed write marks them again
        with :meth:`mark_dirty`)."""
        patches = []
        for group in sorted(self._dirty):
            obj = self.pod_groups.get(group)
            spec = self.specs.get(group)
            if obj is None or spec is None:
                continue
            members = self.members.get(group, {})
            status: dict[str, Any] = {
                "phase": self._phase(group, spec.min_member),
                "scheduled": self.bound(group),
                "running": sum(1 for m in members.values() if m.running),
            }
            started = self._started.get(group)
            if started:
                status["scheduleStartTime"] = started
            current = obj.get("status") or {}
            if any(current.get(k, 0 if k != "phase" else "") != v for k, v in status.items()):
                patches.append((group, status))
        self._dirty.clear()
        return patches

    def mark_dirty(self, groups: Iterable[gang.GroupKey]) -> None:
        self._dirty.update(groups)

    def touch(self, keys: Iterable[str]) -> None:
        """Pods whose assumption changed (bound or forgotten): their PodGroup may change."""
        for key in keys:
            group = self._member_of.get(key)
            if group is not None:
                self._dirty.add(group)


async def write_statuses(book: GangBook, client: ApiClient) -> int:
    """Write the PodGroup statuses that changed (merge patches of the status
    subresource); a write that fails is tried again at the next call. Returns how many
    were written."""
    written = 0
    for group, status in book.status_patches():
        body = json.dumps({"status": status}).encode()
        try:
            await client.request(
                "PATCH",
                podgroups.status_path(group.namespace, group.name),
                body=body,
                content_type="application/merge-patch+json",
            )
            written += 1
        except ApiError as error:
            if error.status != 404:  # a PodGroup deleted meanwhile needs nothing
                log.warning("writing the status of PodGroup %s failed: %s", group, error)
                book.mark_dirty([group])
        except Exception as error:
            log.warning("writing the status of PodGroup %s failed: %s", group, error)
            book.mark_dirty([group])
    return written


# --- the runtime half ---------------------------------------------------------------------


class GangCollector(Collector):
    """The book on /metrics, read at each scrape."""

    def __init__(self, book: GangBook) -> None:
        self.book = book

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        book = self.book
        waiting = GaugeMetricFamily(
            "kubesalvo_gangs_waiting",
            "Gangs waiting for members (holding no room) until their timeout.",
        )
        waiting.add_metric([], len(book._waiting))
        pods = GaugeMetricFamily(
            "kubesalvo_gang_pods",
            "Pods of gangs: pending (queued or being tried) or bound (or being bound).",
            labels=["state"],
        )
        groups = list(book.members)
        pods.add_metric(["pending"], sum(book.pending(g) for g in groups))
        pods.add_metric(["bound"], sum(book.bound(g) for g in groups))
        verdicts = CounterMetricFamily(
            "kubesalvo_gang_verdicts",
            "Coscheduling's PreFilter verdicts on the gangs of each burst: place, wait "
            "(too few members yet), timed_out (rejected, its members back off), short "
            "(a PodGroup's minResources exceed the free room).",
            labels=["verdict"],
        )
        for verdict, count in sorted(book.verdicts.items()):
            verdicts.add_metric([verdict], count)
        yield from (waiting, pods, verdicts)


def install(handle: PluginHandle) -> None:
    """Feed the cycle's GangBook (``handle.live``) from the watches (see the docstring)."""
    book: GangBook = handle.live[COSCHEDULING]
    handle.register_collector(GangCollector(book))

    def on_pod(change: Change[Pod]) -> None:
        pod = change.obj
        if change.type == SYNCED or pod is None:
            return
        book.pod_changed(pod_key(pod), None if change.type == DELETED else pod)

    def on_pod_group(change: Change[podgroups.PodGroup]) -> None:
        obj = change.obj
        if change.type == SYNCED or obj is None:
            return
        meta = obj.metadata
        body = None if change.type == DELETED else to_api_dict(obj)
        book.pod_group_changed(body, meta.namespace, meta.name)

    async def write_while_leading() -> None:
        """Keep PodGroup statuses current, while leading (about once a second)."""
        while True:
            await asyncio.sleep(1.0)
            if handle.is_leader():
                try:
                    await write_statuses(book, handle.client)
                except Exception:
                    log.exception("writing PodGroup statuses failed")

    async def watch_pod_groups() -> None:
        """Watch PodGroups when the CRD is installed (asked once, at start)."""
        try:
            served = await podgroups.served(handle.client)
        except ApiError as error:
            if error.status in (401, 403):
                log.warning(
                    "cannot list podgroups (RBAC): gangs go by their labels only; grant list "
                    "and watch on podgroups and patch on podgroups/status "
                    "(scheduling.x-k8s.io) to use PodGroup objects"
                )
            else:
                log.warning("cannot tell whether PodGroups are served (%s): labels only", error)
            return
        except Exception as error:
            log.warning("cannot tell whether PodGroups are served (%s): labels only", error)
            return
        if not served:
            log.info("no PodGroup CRD (scheduling.x-k8s.io/v1alpha1): gangs by labels only")
            return
        book.watching_pod_groups = True
        handle.watch(podgroups.PODGROUPS, on_pod_group)
        handle.background(write_while_leading)

    handle.on_pod(on_pod)
    handle.before_start(watch_pod_groups)
