"""The web view's overview: the queue, QoS against SLO, gangs and recent bursts, as JSON.

Everything comes from what the running scheduler already keeps (the queue, the QoS table,
the gang book, the burst cycle's recent bursts); nothing is asked of the API server.
Lists are cut to a bound so that a large queue costs the event loop and the browser a
fixed amount per poll; the counts are always whole.
"""

from __future__ import annotations

import collections
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubesalvo.core.plugins import coscheduling, names
from kubesalvo.core.plugins.names import QOS_AWARE
from kubesalvo.sched.explain import min_available_or_none

if TYPE_CHECKING:
    from kubesalvo.sched.app import Scheduler

__all__ = ["QUEUE_ROWS", "QosHistory", "overview"]

QUEUE_ROWS = 200
QUEUE_ORDER = ("active", "backoff", "unschedulable", "gated", "in_flight")
GANG_ROWS = 50
GANG_MEMBER_ROWS = 20
QOS_ROWS = 50


@dataclass
class QosHistory:
    """Each controller's QOS and SLO sampled over time, for the chart: a bounded ring per
    controller (``points`` samples), for at most ``controllers`` controllers."""

    points: int = 150
    controllers: int = QOS_ROWS
    series: dict[str, collections.deque[tuple[float, float | None, float | None]]] = field(
        default_factory=dict
    )

    def sample(self, rows: Iterable[dict[str, Any]], now: float | None = None) -> None:
        at = time.time() if now is None else now
        rows = list(rows)
        seen = {row["controller"] for row in rows}
        # The gone first, so that their room goes to the new.
        for gone in [name for name in self.series if name not in seen]:
            del self.series[gone]
        for row in rows:
            name = row["controller"]
            ring = self.series.get(name)
            if ring is None:
                if len(self.series) >= self.controllers:
                    continue
                ring = self.series[name] = collections.deque(maxlen=self.points)
            ring.append((at, _finite(row["qos"]), _finite(row["slo"])))

    def of(self, controller: str) -> list[list[float | None]]:
        return [list(point) for point in self.series.get(controller, ())]


def _finite(value: Any) -> float | None:
    """JSON has no infinity: a controller with nothing running yet has an unbounded QOS."""
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def overview(
    scheduler: Scheduler, namespace: str = "", history: QosHistory | None = None
) -> dict[str, Any]:
    """The overview page's data; ``namespace`` filters the pod lists (counts stay whole)."""
    return {
        "at": time.time(),
        "schedulerNames": sorted(scheduler.names),
        "leader": scheduler.is_leader(),
        "nodes": len(scheduler.nodes.store),
        "queue": _queue(scheduler, namespace),
        "qos": _qos(scheduler, namespace, history),
        "gangs": _gangs(scheduler, namespace),
        "bursts": _bursts(scheduler),
    }


def _queue(scheduler: Scheduler, namespace: str) -> dict[str, Any]:
    queue = scheduler.queue
    counts = dict(queue.pending_counts())
    counts["in_flight"] = queue.in_flight
    rows: list[dict[str, Any]] = []
    namespaces: collections.Counter[str] = collections.Counter()
    matching = 0
    # Unordered: ordering the active pods computes every pod's sort key, on the loop.
    for where, qp in queue.unordered_listing():
        pod_namespace = qp.pod.metadata.namespace
        namespaces[pod_namespace] += 1
        if namespace and pod_namespace != namespace:
            continue
        matching += 1
        if len(rows) >= QUEUE_ROWS:
            continue
        name = qp.name
        attempt = scheduler.cycle.attempts.get(name)
        rows.append(
            {
                "pod": name,
                "queue": where.value,
                "attempts": qp.attempts,
                "priority": qp.priority,
                "unschedulablePlugins": sorted(qp.rejectors),
                "gatedBy": qp.gating_plugin or None,
                "message": attempt.message if attempt is not None and attempt.uid == qp.key else "",
            }
        )
    # The kept rows in a steady order, whatever order the queue's tables hold them in.
    rows.sort(key=lambda row: (QUEUE_ORDER.index(row["queue"]), row["pod"]))
    return {
        "counts": counts,
        "bindsInFlight": scheduler.cycle.binds_in_flight,
        "namespaces": dict(sorted(namespaces.items())),
        "matching": matching,
        "pods": rows,
    }


def _qos(scheduler: Scheduler, namespace: str, history: QosHistory | None) -> dict[str, Any]:
    table = scheduler.plugins.live.get(QOS_AWARE)
    if table is None:
        return {"enabled": False, "controllers": []}
    rows = [
        {**row, "history": history.of(row["controller"]) if history is not None else []}
        for row in table.json_rows()
        if not namespace or row["namespace"] == namespace
    ]
    for row in rows:
        row["qos"], row["slo"] = _finite(row["qos"]), _finite(row["slo"])
    return {"enabled": True, "controllers": rows[:QOS_ROWS], "matching": len(rows)}


def _gangs(scheduler: Scheduler, namespace: str) -> dict[str, Any]:
    book = scheduler.cycle.gangs
    groups = [g for g in book.members if not namespace or g.namespace == namespace]
    groups.sort(key=str)
    wanted = {key for g in groups[:GANG_ROWS] for key in book.members[g]}
    # The book keeps members by UID: one pass over the pods names them (only with gangs).
    by_uid: dict[str, Any] = {}
    if wanted:
        for candidate in scheduler.pods.store.values():
            if candidate.metadata.uid in wanted:
                by_uid[candidate.metadata.uid] = candidate
    rows = []
    for group in groups[:GANG_ROWS]:
        members = book.members[group]
        in_queue = scheduler.queue.gang_members(group)
        labelled = None
        member_rows: list[dict[str, Any]] = []
        for key, member in sorted(members.items(), key=lambda kv: _pod_name(by_uid.get(kv[0]))):
            pod = by_uid.get(key)
            if labelled is None and pod is not None:
                labelled = min_available_or_none(scheduler.forms.api(pod))
            where = in_queue.get(key)
            if member.node:
                state = "running" if member.running else "bound"
            elif scheduler.cache.is_assumed(key):
                state = "binding"
            else:
                state = where.value if where is not None else "pending"
            if len(member_rows) < GANG_MEMBER_ROWS:
                member_rows.append({"pod": _pod_name(pod), "state": state, "node": member.node})
        described = book.describe(group, labelled)
        if "timeoutSeconds" not in described:
            # Not waiting now: the timeout it would wait, from its PodGroup or the profile.
            described["timeoutSeconds"] = book.timeout(group, _coscheduling_args(scheduler, pod))
        described["memberStates"] = member_rows
        rows.append(described)
    return {"count": len(groups), "gangs": rows}


def _coscheduling_args(scheduler: Scheduler, pod: Any) -> coscheduling.CoschedulingArgs:
    profile = scheduler.config.profile(pod.spec.scheduler_name) if pod is not None else None
    args = profile.args.get(names.COSCHEDULING) if profile is not None else None
    return (
        args if isinstance(args, coscheduling.CoschedulingArgs) else coscheduling.CoschedulingArgs()
    )


def _pod_name(pod: Any) -> str:
    if pod is None:
        return ""
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def _bursts(scheduler: Scheduler) -> dict[str, Any]:
    cycle = scheduler.cycle
    recent = [
        {
            "at": b.at,
            "profile": b.profile,
            "pods": b.pods,
            "binds": b.placed,
            "failures": b.unplaced,
            "kernelSeconds": b.kernel_seconds,
        }
        for b in reversed(cycle.recent_bursts)
    ]
    return {"total": cycle.bursts, "kernelSeconds": cycle.kernel_seconds, "recent": recent}
