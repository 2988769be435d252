"""QosAware's live SLO table: each controller's running, waiting and binding time.

The pod informer feeds every pod of kubesalvo's profiles (``observe`` on each version,
``forget`` when deleted); the binding cycle says when a bind starts and ends. A pod's
times come from the API object itself - creation (``metadata.creationTimestamp``), bound
(PodScheduled=True's transition), running (Ready=True's transition, else
``status.startTime`` of a Running pod) - so after a restart the table is rebuilt from the
pods as the informer lists them, with nothing kept on disk. A bind this process has in
flight makes its pod BINDING from the moment it was sent.

The formulas (QOS, TTV) and the rendering are the plugin's (``core/plugins/qos_aware.py``).
The table serves the queue's sort key, ``/debug/qos`` and the gauges on /metrics.

``install`` is QosAware's runtime half (see ``sched/plugin_handle.py``): when a profile
enables the plugin it makes the table, feeds it from the pod informer and the binding
cycle, watches ReplicaSets and Jobs for their owners, orders the queue by it when the
plugin is the queue sort, and serves ``/debug/qos``.
"""

from __future__ import annotations

import datetime
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kubesalvo.core.plugins import qos_aware
from kubesalvo.core.plugins.names import QOS_AWARE
from kubesalvo.core.plugins.qos_aware import Controller, QosAwareArgs, Totals
from kubesalvo.sched.client import ApiError
from kubesalvo.sched.informers import Informer
from kubesalvo.sched.informers.models import Owned
from kubesalvo.sched.informers.store import DELETED, SYNCED, Change
from kubesalvo.sched.informers.watch import Resource
from kubesalvo.sched.plugin_handle import PluginHandle

if TYPE_CHECKING:
    from kubesalvo.sched.events import EventRecorder
    from kubesalvo.sched.informers.models import Pod
    from kubesalvo.sched.queue.queue import QueuedPod

__all__ = ["OWNER_KINDS", "QosCollector", "QosTable", "install", "parse_time"]

# What QosAware watches to find a pod's Deployment (behind its ReplicaSet) and CronJob
# (behind its Job): only the objects' metadata is decoded.
OWNER_KINDS: tuple[tuple[Resource[Owned], str], ...] = (
    (Resource("replicasets", "/apis/apps/v1/replicasets", Owned), "ReplicaSet"),
    (Resource("jobs", "/apis/batch/v1/jobs", Owned), "Job"),
)

log = logging.getLogger(__name__)


def parse_time(text: str | None) -> float | None:
    """An RFC 3339 time of the API (``2026-11-24T00:40:01Z``, fractions allowed) as epoch
    seconds, or None when absent or not a time."""
    if not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass
class _PodTimes:
    controller: Controller
    slo: float
    created: float
    creation_order: tuple[float, str]
    bound: float | None = None  # when it was bound (or our bind was confirmed)
    running: float | None = None  # when it started running
    binding_since: float | None = None  # our bind call, in flight since
    owner: tuple[str, str, str] | None = None  # its controlling owner (kind, ns, name)
    template_hash: str | None = None

    def add_to(self, totals: dict[str, float], now: float) -> None:
        if self.running is not None:
            totals["running"] += max(0.0, now - self.running)
            totals["running_pods"] += 1
        if self.binding_since is not None and self.bound is None:
            totals["waiting"] += max(0.0, self.binding_since - self.created)
            totals["binding"] += max(0.0, now - self.binding_since)
            totals["binding_pods"] += 1
        else:
            end = self.bound if self.bound is not None else now
            totals["waiting"] += max(0.0, end - self.created)
            if self.bound is None:
                totals["waiting_pods"] += 1
        totals["pods"] += 1


def _condition_time(pod: Pod, kind: str) -> float | None:
    for condition in pod.status.conditions:
        if condition.type == kind and condition.status == "True":
            return parse_time(condition.last_transition_time) or None
    return None


class QosTable:
    """The per-controller table (see the module docstring)."""

    def __init__(
        self,
        args: QosAwareArgs | None = None,
        *,
        recorder: EventRecorder | None = None,
        clock: Callable[[], float] = time.time,
        parent_of: Callable[[str, str, str], str | None] | None = None,
    ) -> None:
        self.args = args or QosAwareArgs()
        self.recorder = recorder
        self.clock = clock
        self.parent_of = parent_of or self._parent
        # (kind, namespace, name) of a ReplicaSet or Job -> its Deployment or CronJob,
        # from the owner informers; and the pods each such owner has.
        self._parents: dict[tuple[str, str, str], str] = {}
        self._owned: dict[tuple[str, str, str], dict[str, None]] = {}
        self._pods: dict[str, _PodTimes] = {}  # by "namespace/name"
        self._controllers: dict[Controller, dict[str, None]] = {}
        self._warned: set[str] = set()  # pods told of a bad annotation (by uid)

    # --- what the informer and the binding cycle say ------------------------------------

    def observe(self, pod: Pod) -> None:
        meta = pod.metadata
        key = f"{meta.namespace}/{meta.name}"
        raw = meta.annotations.get(qos_aware.SLO_ANNOTATION)
        slo, valid = qos_aware.parse_slo(raw, self.args.default_slo)
        if not valid and meta.uid not in self._warned and raw is not None:
            self._warned.add(meta.uid)
            self._warn(pod, raw)
        times = self._pods.get(key)
        if times is None:
            owner = next((o for o in meta.owner_references if o.controller), None)
            owner_key = (owner.kind, meta.namespace, owner.name) if owner is not None else None
            controller = self._resolve(pod)
            created = parse_time(meta.creation_timestamp) or self.clock()
            times = _PodTimes(controller, slo, created, (created, meta.name), owner=owner_key)
            self._pods[key] = times
            self._controllers.setdefault(controller, {})[key] = None
            if owner_key is not None:
                self._owned.setdefault(owner_key, {})[key] = None
        times.slo = slo
        times.template_hash = meta.labels.get("pod-template-hash")
        if pod.spec.node_name and times.bound is None:
            times.bound = _condition_time(pod, "PodScheduled") or times.binding_since
            if times.bound is None:
                times.bound = self.clock()
        if times.running is None:
            started = _condition_time(pod, "Ready")
            if started is None and pod.status.phase == "Running":
                started = parse_time(pod.status.start_time)
            times.running = started

    def _resolve(self, pod: Pod) -> Controller:
        meta = pod.metadata
        owners = [(o.kind, o.name, o.controller) for o in meta.owner_references]
        return qos_aware.controller_of(
            meta.namespace, meta.name, owners, meta.labels.get("pod-template-hash"), self.parent_of
        )

    def _parent(self, kind: str, namespace: str, name: str) -> str | None:
        return self._parents.get((kind, namespace, name))

    def _move(self, key: str, controller: Controller) -> None:
        """File a pod under another controller (its owner's parent became known)."""
        times = self._pods[key]
        members = self._controllers[times.controller]
        del members[key]
        if not members:
            del self._controllers[times.controller]
        times.controller = controller
        self._controllers.setdefault(controller, {})[key] = None

    def forget(self, namespace: str, name: str, uid: str = "") -> None:
        key = f"{namespace}/{name}"
        times = self._pods.pop(key, None)
        self._warned.discard(uid)
        if times is None:
            return
        members = self._controllers.get(times.controller)
        if members is not None:
            members.pop(key, None)
            if not members:
                del self._controllers[times.controller]
        if times.owner is not None:
            pods = self._owned.get(times.owner)
            if pods is not None:
                pods.pop(key, None)
                if not pods:
                    del self._owned[times.owner]

    def owner_handler(self, kind: str) -> Callable[[Change[Owned]], None]:
        """The handler of the ``kind`` (ReplicaSet or Job) owner informer: records the
        Deployment or CronJob that controls each, and files its pods under it."""
        parent_kind = {"ReplicaSet": "Deployment", "Job": "CronJob"}[kind]

        def handle(change: Change[Owned]) -> None:
            obj = change.obj
            if change.type == SYNCED or obj is None:
                return
            meta = obj.metadata
            key = (kind, meta.namespace, meta.name)
            parent = next(
                (o.name for o in meta.owner_references if o.controller and o.kind == parent_kind),
                None,
            )
            if change.type == DELETED or parent is None:
                changed = self._parents.pop(key, None) is not None
            else:
                changed = self._parents.get(key) != parent
                self._parents[key] = parent
            if not changed:
                return
            for pod_key in self._owned.get(key, ()):
                times = self._pods[pod_key]
                controller = qos_aware.controller_of(
                    meta.namespace,
                    pod_key.partition("/")[2],
                    [(kind, meta.name, True)],
                    times.template_hash,
                    self.parent_of,
                )
                if controller != times.controller:
                    self._move(pod_key, controller)

        return handle

    def bind_started(self, namespace: str, name: str) -> None:
        times = self._pods.get(f"{namespace}/{name}")
        if times is not None and times.bound is None:
            times.binding_since = self.clock()

    def bind_ended(self, namespace: str, name: str, bound: bool) -> None:
        times = self._pods.get(f"{namespace}/{name}")
        if times is None:
            return
        if bound:
            times.bound = times.bound or self.clock()
        else:
            # Requeued: waiting again, and the time spent binding counts as waiting.
            times.binding_since = None

    def _warn(self, pod: Pod, raw: str) -> None:
        note = qos_aware.invalid_slo_note(raw, self.args.default_slo)
        log.warning("pod %s/%s: %s", pod.metadata.namespace, pod.metadata.name, note)
        if self.recorder is None:
            return
        from kubesalvo.sched.events import WARNING, ObjectRef

        meta = pod.metadata
        self.recorder.event(
            ObjectRef(meta.namespace, meta.name, meta.uid),
            WARNING,
            "InvalidSLO",
            "Scheduling",
            note,
        )

    # --- what it tells -----------------------------------------------------------------

    def totals(self, controller: Controller, now: float | None = None) -> Totals:
        now = self.clock() if now is None else now
        sums = dict.fromkeys(
            ("running", "waiting", "binding", "running_pods", "waiting_pods", "binding_pods"),
            0.0,
        )
        sums["pods"] = 0.0
        slo = self.args.default_slo
        for key in self._controllers.get(controller, ()):
            times = self._pods[key]
            slo = times.slo  # the template's annotation: the same on every pod
            times.add_to(sums, now)
        return Totals(
            slo=slo,
            running=sums["running"],
            waiting=sums["waiting"],
            binding=sums["binding"],
            running_pods=int(sums["running_pods"]),
            waiting_pods=int(sums["waiting_pods"]),
            binding_pods=int(sums["binding_pods"]),
            pods=int(sums["pods"]),
        )

    def rows(self, now: float | None = None) -> list[tuple[Controller, Totals]]:
        """Every controller, the most urgent (lowest TTV) first."""
        now = self.clock() if now is None else now
        rows = [(c, self.totals(c, now)) for c in self._controllers]
        rows.sort(key=lambda row: (row[1].ttv, row[0]))
        return rows

    def sort_keys(self) -> Callable[[QueuedPod], tuple[Any, ...]]:
        """A queue sort key for this moment: TTV (each controller's computed once), then
        priority, then creation, then queue time."""
        now = self.clock()
        ttvs: dict[Controller, float] = {}

        def key(qp: QueuedPod) -> tuple[Any, ...]:
            meta = qp.pod.metadata
            times = self._pods.get(f"{meta.namespace}/{meta.name}")
            if times is None:
                return (math.inf, -qp.priority, (math.inf, ""), qp.timestamp)
            ttv = ttvs.get(times.controller)
            if ttv is None:
                ttv = ttvs[times.controller] = self.totals(times.controller, now).ttv
            return (ttv, -qp.priority, times.creation_order, qp.timestamp)

        return key

    def text(self) -> str:
        return qos_aware.render_table(self.rows())

    def json_rows(self) -> list[dict[str, Any]]:
        out = []
        for controller, t in self.rows():
            out.append(
                {
                    "controller": str(controller),
                    "namespace": controller.namespace,
                    "kind": controller.kind,
                    "name": controller.name,
                    "qos": t.qos,
                    "slo": t.slo,
                    "ttvSeconds": None if math.isinf(t.ttv) else t.ttv,
                    "ttv": qos_aware.go_duration(t.ttv),
                    "runningSeconds": t.running,
                    "waitingSeconds": t.waiting,
                    "bindingSeconds": t.binding,
                    "runningPods": t.running_pods,
                    "waitingPods": t.waiting_pods,
                    "bindingPods": t.binding_pods,
                }
            )
        return out

    def controller_of(self, namespace: str, name: str) -> tuple[Controller, Totals] | None:
        times = self._pods.get(f"{namespace}/{name}")
        if times is None:
            return None
        return times.controller, self.totals(times.controller)


class QosCollector(Collector):
    """The table as gauges, computed at each scrape, for the ``top_controllers``
    controllers with the most waiting pods (bounded label cardinality)."""

    def __init__(self, table: QosTable) -> None:
        self.table = table

    def collect(self) -> Iterator[GaugeMetricFamily]:
        labels = ["namespace", "kind", "name"]
        qos = GaugeMetricFamily(
            "kubesalvo_qos_ratio", "Share of a controller's pod time spent running.", labels=labels
        )
        slo = GaugeMetricFamily("kubesalvo_qos_slo", "A controller's SLO.", labels=labels)
        ttv = GaugeMetricFamily(
            "kubesalvo_qos_time_to_violation_seconds",
            "Seconds until the controller's QoS falls below its SLO (negative: violated).",
            labels=labels,
        )
        seconds = GaugeMetricFamily(
            "kubesalvo_qos_pod_seconds",
            "Seconds a controller's live pods spent in each state.",
            labels=[*labels, "state"],
        )
        pods = GaugeMetricFamily(
            "kubesalvo_qos_pods",
            "A controller's live pods in each state.",
            labels=[*labels, "state"],
        )
        rows = self.table.rows()
        rows.sort(key=lambda row: (-row[1].waiting_pods, row[1].ttv, row[0]))
        for controller, t in rows[: self.table.args.top_controllers]:
            names = [controller.namespace, controller.kind, controller.name]
            qos.add_metric(names, t.qos)
            slo.add_metric(names, t.slo)
            ttv.add_metric(names, t.ttv)
            for state, value, count in (
                ("running", t.running, t.running_pods),
                ("waiting", t.waiting, t.waiting_pods),
                ("binding", t.binding, t.binding_pods),
            ):
                seconds.add_metric([*names, state], value)
                pods.add_metric([*names, state], count)
        yield from (qos, slo, ttv, seconds, pods)


# --- the runtime half ---------------------------------------------------------------------


def install(handle: PluginHandle) -> None:
    """QosAware's runtime half, when a profile enables it (see the module docstring)."""
    config = handle.config
    points = ("queueSort", "preBind", "postBind")
    profiles = [p for p in config.profiles if any(QOS_AWARE in p.plugins.at(x) for x in points)]
    if not profiles:
        return
    args = profiles[0].args.get(QOS_AWARE)
    table = QosTable(
        args if isinstance(args, QosAwareArgs) else QosAwareArgs(), recorder=handle.recorder
    )
    handle.live[QOS_AWARE] = table
    if config.profiles[0].queue_sort == QOS_AWARE:
        handle.queue.key_factory = table.sort_keys
    handle.on_bind(table.bind_started, table.bind_ended)
    handle.register_collector(QosCollector(table))
    ours = handle.scheduler_names

    def on_pod(change: Change[Pod]) -> None:
        pod = change.obj
        if change.type == SYNCED or pod is None or pod.spec.scheduler_name not in ours:
            return
        if change.type == DELETED:
            table.forget(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid)
        else:
            table.observe(pod)

    handle.on_pod(on_pod)
    # ReplicaSets' and Jobs' owners (Deployments, CronJobs); not a readiness gate:
    # until they list, a Deployment's pods are known by their ReplicaSet's name.
    owners = [handle.watch(resource, table.owner_handler(kind)) for resource, kind in OWNER_KINDS]

    async def check_owner_access() -> None:
        """Without list access to ReplicaSets or Jobs: one warning, and pods are filed by
        what their own objects say (a Deployment's by its ReplicaSet's name)."""
        for informer in owners:
            await _probe_owner(handle, informer)

    handle.before_start(check_owner_access)

    async def page(request: web.Request) -> web.Response:
        if request.query.get("format") == "json":
            return web.json_response({"controllers": table.json_rows()})
        return web.Response(text=table.text())

    handle.add_debug_page("/debug/qos", page)
    handle.add_debug_page("/", page)


async def _probe_owner(handle: PluginHandle, informer: Informer[Owned]) -> None:
    try:
        await handle.client.request("GET", informer.resource.path, params={"limit": "1"})
    except ApiError as error:
        if error.status not in (401, 403):
            return
        log.warning(
            "QosAware: cannot list %s (RBAC): their pods' %s is not resolved; grant "
            "list and watch on replicasets and jobs",
            informer.resource.plural,
            "CronJob" if informer.resource.plural == "jobs" else "Deployment",
        )
        handle.unwatch(informer)
    except Exception:
        log.debug("probing %s failed", informer.resource.plural, exc_info=True)
