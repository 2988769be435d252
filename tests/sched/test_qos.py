"""QosAware's live table (sched/qos.py): rebuilt from pods' own timestamps, told of binds,
ordering the queue, and refusing nothing a watch can deliver."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesalvo.core.plugins.qos_aware import Controller, QosAwareArgs
from kubesalvo.sched.informers.models import Pod
from kubesalvo.sched.qos import QosCollector, QosTable, parse_time
from kubesalvo.sched.queue.queue import QueuedPod

T0 = 1_800_000_000.0  # epoch seconds of "2027-01-15T08:00:00Z"


def stamp(seconds: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(T0 + seconds, datetime.UTC).isoformat()


def pod(
    name: str,
    created: float,
    *,
    app: str = "web",
    bound: float | None = None,
    ready: float | None = None,
    slo: str | None = None,
    priority: int = 0,
) -> Pod:
    conditions = []
    if bound is not None:
        conditions.append(
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(bound)}
        )
    if ready is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": stamp(ready)})
    raw: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "creationTimestamp": stamp(created),
            "labels": {"pod-template-hash": "abc12"},
            "annotations": {"kubesalvo.io/slo": slo} if slo is not None else {},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-abc12",
                 "uid": "rs", "controller": True}
            ],
        },
        "spec": {"nodeName": "n0" if bound is not None else "", "priority": priority},
        "status": {"conditions": conditions, "phase": "Running" if ready is not None else ""},
    }  # fmt: skip
    return msgspec.convert(raw, Pod)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = T0 + now

    def __call__(self) -> float:
        return self.now


def test_times_parse_with_and_without_fractions():
    assert parse_time("2027-01-15T08:00:00Z") == T0
    assert parse_time("2027-01-15T08:00:00.5Z") == T0 + 0.5
    assert parse_time("not a time") is None and parse_time("") is None


def test_the_table_is_rebuilt_from_the_pods_own_timestamps():
    table = QosTable(clock=Clock(100))
    table.observe(pod("web-1", 0, bound=10, ready=20))  # waited 10, running 80
    table.observe(pod("web-2", 50))  # waiting 50
    ((controller, totals),) = table.rows()
    assert controller == Controller("ns", "Deployment", "web")
    assert (totals.running, totals.waiting) == (80, 60)
    assert (totals.running_pods, totals.waiting_pods, totals.pods) == (1, 1, 2)
    assert totals.qos == 80 / 140 and totals.slo == 0.8


def test_binding_time_is_counted_from_the_bind_to_its_end():
    clock = Clock(10)
    table = QosTable(clock=clock)
    table.observe(pod("web-1", 0))
    table.bind_started("ns", "web-1")
    clock.now = T0 + 12
    t = table.rows()[0][1]
    assert (t.waiting, t.binding, t.binding_pods) == (10, 2, 1)
    table.bind_ended("ns", "web-1", bound=False)  # requeued: waiting again, all of it
    t = table.rows()[0][1]
    assert (t.waiting, t.binding, t.waiting_pods) == (12, 0, 1)


def test_the_queue_serves_the_lowest_ttv_first_and_one_controllers_pods_in_creation_order():
    table = QosTable(clock=Clock(100))
    table.observe(pod("relaxed-1", 0, app="relaxed", slo="0.5"))
    table.observe(pod("strict-2", 20, app="strict", slo="0.95"))
    table.observe(pod("strict-1", 10, app="strict", slo="0.95"))
    key = table.sort_keys()
    queued = [
        QueuedPod(p, key=p.metadata.uid, timestamp=5.0 - i)  # queue times in reverse
        for i, p in enumerate(
            [pod("relaxed-1", 0, app="relaxed", slo="0.5"),
             pod("strict-2", 20, app="strict", slo="0.95"),
             pod("strict-1", 10, app="strict", slo="0.95")]
        )
    ]  # fmt: skip
    order = [qp.pod.metadata.name for qp in sorted(queued, key=key)]
    assert order == ["strict-1", "strict-2", "relaxed-1"]


def test_a_deleted_pod_leaves_the_table_and_an_empty_controller_goes():
    table = QosTable(clock=Clock(10))
    table.observe(pod("web-1", 0))
    table.forget("ns", "web-1", "uid-web-1")
    assert table.rows() == []


def test_a_bad_slo_uses_the_default_and_the_gauges_are_bounded():
    table = QosTable(QosAwareArgs(default_slo=0.7, top_controllers=1), clock=Clock(10))
    table.observe(pod("a-1", 0, app="a", slo="lots"))
    table.observe(pod("b-1", 0, app="b"))
    table.observe(pod("b-2", 0, app="b"))
    assert {c.name: t.slo for c, t in table.rows()} == {"a": 0.7, "b": 0.7}
    families = {f.name: f for f in QosCollector(table).collect()}
    names = {s.labels["name"] for s in families["kubesalvo_qos_ratio"].samples}
    assert names == {"b"}  # the one with the most waiting pods


def test_a_job_pod_is_filed_under_the_cronjob_once_the_job_is_seen():
    from kubesalvo.sched.informers.models import Owned
    from kubesalvo.sched.informers.store import ADDED, DELETED, Change

    table = QosTable(clock=Clock(10))
    job_pod = msgspec.convert(
        {
            "metadata": {
                "name": "nightly-1-x",
                "namespace": "ns",
                "uid": "u",
                "creationTimestamp": stamp(0),
                "ownerReferences": [{"kind": "Job", "name": "nightly-1", "controller": True}],
            }
        },
        Pod,
    )
    table.observe(job_pod)
    assert [c.kind for c, _ in table.rows()] == ["Job"]
    job = msgspec.convert(
        {
            "metadata": {
                "name": "nightly-1",
                "namespace": "ns",
                "ownerReferences": [{"kind": "CronJob", "name": "nightly", "controller": True}],
            }
        },
        Owned,
    )
    handle = table.owner_handler("Job")
    handle(Change(ADDED, job, None))
    assert [(c.kind, c.name) for c, _ in table.rows()] == [("CronJob", "nightly")]
    handle(Change(DELETED, job, job))
    assert [c.kind for c, _ in table.rows()] == ["Job"]
