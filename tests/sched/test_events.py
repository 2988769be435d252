"""Events and the PodScheduled condition: texts, times, coalescing and the pending bound
on their own, then written to the real API server (kube-scheduler's texts, a series on one
Event object, the status patch, a many-pod failure aggregated)."""

from __future__ import annotations

import asyncio
import collections
import datetime
from typing import Any

import msgspec
import pytest

from kubesalvo.sched.client import ApiClient, Credentials
from kubesalvo.sched.events import (
    MAX_NOTE_BYTES,
    EventRecorder,
    ObjectRef,
    RecorderSettings,
    micro_time,
    rfc3339,
    truncate_note,
)
from kubesalvo.sched.metrics import SchedulerMetrics

POD = ObjectRef("team-a", "web-1", "uid-1")


def recorder(metrics: SchedulerMetrics | None = None, **settings) -> EventRecorder:
    # Never started: nothing is sent, so no server is needed to look at what is pending.
    client = ApiClient(Credentials(server="http://127.0.0.1:9"))
    return EventRecorder(
        client, RecorderSettings(**settings), clock=lambda: 1_700_000_000.5, metrics=metrics
    )


def test_micro_time_is_utc_rfc3339_with_microseconds():
    assert micro_time(1_700_000_000.25) == "2023-11-14T22:13:20.250000Z"
    parsed = datetime.datetime.strptime(micro_time(0.0), "%Y-%m-%dT%H:%M:%S.%fZ")
    assert parsed.year == 1970


def test_rfc3339_is_to_the_second():
    assert rfc3339(1_700_000_000.9) == "2023-11-14T22:13:20Z"


def test_long_notes_are_cut_to_what_events_k8s_io_accepts():
    note = "0/5000 nodes are available: " + "é" * 2000
    cut = truncate_note(note)
    assert len(cut.encode()) <= MAX_NOTE_BYTES and cut.endswith("...")
    assert truncate_note("short") == "short"


def test_the_same_event_repeated_is_one_pending_write():
    events = recorder()
    for _ in range(100):
        events.failed_scheduling(POD, "0/3 nodes are available: 3 Insufficient cpu.")
    assert events.pending == 1


def test_different_messages_or_pods_are_separate_events():
    events = recorder()
    events.failed_scheduling(POD, "0/3 nodes are available: 3 Insufficient cpu.")
    events.failed_scheduling(POD, "0/3 nodes are available: 3 Insufficient memory.")
    events.failed_scheduling(ObjectRef("team-a", "web-2", "uid-2"), "0/3 nodes are available.")
    assert events.pending == 3


def test_condition_updates_of_one_pod_coalesce():
    events = recorder()
    events.pod_condition(POD, "Unschedulable", "first")
    events.pod_condition(POD, "Unschedulable", "second")
    assert events.pending == 1


def test_writes_past_the_pending_limit_are_dropped_and_counted():
    metrics = SchedulerMetrics()
    events = recorder(metrics, max_pending=10)
    for i in range(25):
        events.failed_scheduling(ObjectRef("ns", f"pod-{i}", f"uid-{i}"), "no nodes")
    assert events.pending == 10
    assert events.dropped == 15
    assert b"kubesalvo_events_dropped_total 15.0" in metrics.render()


# -- against the real API server ---------------------------------------------------------


@pytest.fixture
async def started(api):
    events = EventRecorder(api, RecorderSettings(qps=500, burst=500))
    events.start()
    try:
        yield events
    finally:
        await events.stop()


async def list_events(api, namespace: str) -> list[dict]:
    response = await api.request("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
    return msgspec.json.decode(response.body)["items"]


async def settled(events: EventRecorder) -> None:
    assert await events.flush(timeout=20), "events still pending"


def ref(pod: dict) -> ObjectRef:
    meta = pod["metadata"]
    return ObjectRef(meta["namespace"], meta["name"], meta["uid"])


@pytest.mark.integration
async def test_repeated_failures_of_a_pod_form_one_event_with_a_series(
    api, namespace, create_pod, started
):
    pod = ref(await create_pod(namespace, "stuck"))
    message = "0/3 nodes are available: 3 Insufficient cpu."
    started.failed_scheduling(pod, message)
    await settled(started)
    for _ in range(4):
        started.failed_scheduling(pod, message)
    await settled(started)
    (event,) = await list_events(api, namespace)
    assert event["reason"] == "FailedScheduling" and event["type"] == "Warning"
    assert event["action"] == "Scheduling" and event["note"] == message
    assert event["regarding"]["uid"] == pod.uid and event["regarding"]["kind"] == "Pod"
    assert event["reportingController"] == "kubesalvo"
    assert event["series"]["count"] == 5
    assert started.sent["event"] == 1 and started.sent["series"] == 1


async def scheduled_and_failure_count(api: Any, namespace: str) -> tuple[int, int]:
    """How many Scheduled Events the namespace holds, and the count of its one
    FailedScheduling Event (the only other reason allowed)."""
    written = await list_events(api, namespace)
    by_reason = collections.Counter(e["reason"] for e in written)
    assert set(by_reason) == {"Scheduled", "FailedScheduling"}
    (failure,) = [e for e in written if e["reason"] == "FailedScheduling"]
    return by_reason["Scheduled"], failure["series"]["count"]


@pytest.mark.integration
async def test_written_series_are_forgotten_past_the_bound_least_recent_first(
    api, namespace, create_pod
):
    # Every bound pod has a Scheduled series of its own: the recorder keeps a bounded
    # number once written, not the whole window's, and a series that recurs stays.
    events = EventRecorder(api, RecorderSettings(qps=500, burst=500, max_series=8))
    events.start()
    try:
        stuck = ref(await create_pod(namespace, "stuck"))
        message = "0/3 nodes are available: 3 Insufficient cpu."
        events.failed_scheduling(stuck, message)
        for i in range(40):
            events.scheduled(ObjectRef(namespace, f"web-{i}", f"uid-{i}"), "node-1")
            if i % 5 == 4:  # recurs within the 8 most recent: the newest again
                events.failed_scheduling(stuck, message)
                await settled(events)
        assert events.series_remembered <= 8
        # The recurring failure stayed one series: one Event counting every occurrence.
        assert await scheduled_and_failure_count(api, namespace) == (40, 9)
    finally:
        await events.stop()


@pytest.mark.integration
async def test_a_burst_noted_at_once_is_written_whole_and_forgotten_down_to_the_bound(
    api, namespace, create_pod
):
    # A burst's Scheduled events are all noted before the first is written: series
    # waiting for their write stay, the written ones are forgotten least recent first.
    events = EventRecorder(api, RecorderSettings(qps=1000, burst=1000, max_series=16))
    events.start()
    try:
        stuck = ref(await create_pod(namespace, "stuck"))
        message = "0/3 nodes are available: 3 Insufficient cpu."
        for i in range(120):
            events.scheduled(ObjectRef(namespace, f"web-{i}", f"uid-{i}"), "node-1")
        events.failed_scheduling(stuck, message)  # the most recent: it stays
        assert events.series_remembered == 121
        await settled(events)
        assert events.series_remembered == 16
        events.failed_scheduling(stuck, message)
        await settled(events)
        assert await scheduled_and_failure_count(api, namespace) == (120, 2)
    finally:
        await events.stop()


@pytest.mark.integration
async def test_scheduled_and_preempted_events_use_kube_schedulers_texts(
    api, namespace, create_pod, started
):
    winner = ref(await create_pod(namespace, "winner"))
    victim = ref(await create_pod(namespace, "victim"))
    started.scheduled(winner, "node-1", profile="gpu-scheduler")
    started.preempted(victim, winner, "node-1")
    await settled(started)
    by_reason = {e["reason"]: e for e in await list_events(api, namespace)}
    assert by_reason["Scheduled"]["note"] == f"Successfully assigned {namespace}/winner to node-1"
    assert by_reason["Scheduled"]["type"] == "Normal"
    assert by_reason["Scheduled"]["reportingController"] == "gpu-scheduler"
    preempted = by_reason["Preempted"]
    assert preempted["note"] == f"Preempted by pod {winner.uid} on node node-1"
    assert preempted["action"] == "Preempting"
    assert preempted["regarding"]["name"] == "victim"
    assert preempted["related"]["name"] == "winner"
    assert preempted["reportingController"] == "kubesalvo"


@pytest.mark.integration
async def test_the_pod_scheduled_condition_is_patched_on_the_status(
    api, namespace, create_pod, started
):
    pod = ref(await create_pod(namespace, "pending"))
    message = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    started.pod_condition(pod, "Unschedulable", message, nominated_node_name="node-2")
    await settled(started)
    response = await api.request("GET", f"/api/v1/namespaces/{namespace}/pods/pending")
    status = msgspec.json.decode(response.body)["status"]
    (condition,) = [c for c in status["conditions"] if c["type"] == "PodScheduled"]
    assert condition["status"] == "False"
    assert condition["reason"] == "Unschedulable" and condition["message"] == message
    assert condition["lastTransitionTime"]
    assert status["nominatedNodeName"] == "node-2"
    # The same condition again is not written again.
    started.pod_condition(pod, "Unschedulable", message)
    assert started.pending == 0


@pytest.mark.integration
async def test_a_many_pod_failure_writes_one_event_per_pod_however_often_each_failed(
    api, namespace, started
):
    pods = [ObjectRef(namespace, f"job-{i}", f"uid-{i}") for i in range(150)]
    message = "0/5000 nodes are available: 5000 Insufficient nvidia.com/gpu."
    for _ in range(10):
        for pod in pods:
            started.failed_scheduling(pod, message)
        await asyncio.sleep(0.01)
    await settled(started)
    events = await list_events(api, namespace)
    assert len(events) == 150
    assert sum(e.get("series", {}).get("count", 1) for e in events) == 1500
    assert started.sent["event"] == 150
    assert started.dropped == 0


# -- through an outage: the fault proxy in front of the real API server -------------------


@pytest.mark.integration
async def test_a_condition_and_an_event_refused_during_an_outage_are_written_after_it(
    api, proxied_api, proxy, namespace, create_pod
):
    """The API server answers 429 (and would 5xx) while it is overloaded or restarting:
    the writes are tried again after a delay, not lost."""
    pod = ref(await create_pod(namespace, "waiting"))
    proxy.faults.throttle, proxy.faults.throttle_match, proxy.faults.retry_after = 6, "", 0
    events = EventRecorder(proxied_api, RecorderSettings(qps=500, burst=500, retry_delay=0.05))
    events.start()
    try:
        message = "0/3 nodes are available: 3 Insufficient cpu."
        events.pod_condition(pod, "Unschedulable", message)
        events.failed_scheduling(pod, message)
        await settled(events)
    finally:
        await events.stop()
    assert proxy.stats.throttled == 6 and events.gave_up == 0
    response = await api.request("GET", f"/api/v1/namespaces/{namespace}/pods/waiting")
    status = msgspec.json.decode(response.body)["status"]
    (condition,) = [c for c in status["conditions"] if c["type"] == "PodScheduled"]
    assert condition["reason"] == "Unschedulable" and condition["message"] == message
    (event,) = await list_events(api, namespace)
    assert event["reason"] == "FailedScheduling" and event["note"] == message


@pytest.mark.integration
async def test_a_write_the_api_server_refuses_for_good_is_dropped_at_once(api, namespace, started):
    """A 4xx other than 429 will not change on retry: logged, counted, not tried again."""
    gone = ObjectRef(namespace, "x" * 300, "uid-x")  # an event name longer than 253
    started.failed_scheduling(gone, "0/1 nodes are available: 1 Insufficient cpu.")
    await settled(started)
    assert started.gave_up == 1 and started.sent["event"] == 0
