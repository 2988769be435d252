"""Event recording without a server: texts, times, coalescing and the pending bound.

Writing to the real API server (series on one Event object, the condition patch) is in
test_events_integration.py.
"""

from __future__ import annotations

import datetime

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

POD = ObjectRef("team-a", "web-1", "uid-1")


def recorder(**settings) -> EventRecorder:
    # Never started: nothing is sent, so no server is needed to look at what is pending.
    client = ApiClient(Credentials(server="http://127.0.0.1:9"))
    return EventRecorder(client, RecorderSettings(**settings), clock=lambda: 1_700_000_000.5)


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
    events = recorder(max_pending=10)
    for i in range(25):
        events.failed_scheduling(ObjectRef("ns", f"pod-{i}", f"uid-{i}"), "no nodes")
    assert events.pending == 10
    assert events.dropped == 15
