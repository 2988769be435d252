"""What the queue tells ``on_incoming``: each pod's entry into a queue, with kube-scheduler's
event label (scheduler_queue_incoming_pods_total), on a fake clock."""

from __future__ import annotations

from collections import Counter

from kubesalvo.core.plugins import names
from kubesalvo.sched.queue import NODE_ADD, SchedulingQueue
from kubesalvo.sched.queue.cluster_events import ASSIGNED_POD_DELETE, pod_update_events
from kubesalvo.sched.queue.queue import incoming_label
from tests.helpers.queue import make_pod, make_queue, names_of


def recording(q: SchedulingQueue) -> Counter[tuple[str, str]]:
    seen: Counter[tuple[str, str]] = Counter()
    q.on_incoming = lambda queue, event: seen.update([(queue, event)])
    return seen


def test_a_new_pod_enters_active_and_a_gated_one_unschedulable_on_pod_add() -> None:
    q, _ = make_queue()
    seen = recording(q)
    q.add(make_pod("a"))
    q.add(make_pod("g", gates=("example.com/wait",)))
    assert seen == {
        ("active", "UnschedulablePodAdd"): 1,
        ("unschedulable", "UnschedulablePodAdd"): 1,
    }


def test_removing_the_gates_enters_active_on_the_gates_eliminated_update() -> None:
    q, _ = make_queue()
    gated = make_pod("g", gates=("example.com/wait",))
    q.add(gated)
    seen = recording(q)
    still = make_pod("g", gates=("example.com/wait",), labels={"x": "y"})
    q.update(gated, still)  # still gated: nothing enters anything
    assert seen == {}
    q.update(still, make_pod("g", labels={"x": "y"}))
    assert seen == {("active", "UnschedulablePodUpdatePodSchedulingGatesEliminated"): 1}


def test_a_failed_attempt_parks_on_schedule_attempt_failure_then_moves_on_an_event() -> None:
    q, clock = make_queue(hints={})  # no hint: any registered event moves the pod
    q.add(make_pod("a"))
    seen = recording(q)
    (qp,) = q.pop_burst(10)
    q.add_unschedulable(qp, [names.NODE_RESOURCES_FIT])
    assert seen == {("unschedulable", "ScheduleAttemptFailure"): 1}
    q.on_event(NODE_ADD, None, object())  # still backing off: to backoffQ
    assert seen[("backoff", "NodeAdd")] == 1
    clock.step(30)
    q.flush()
    assert seen[("active", "BackoffComplete")] == 1


def test_an_error_backs_off_on_schedule_attempt_failure() -> None:
    q, _ = make_queue()
    q.add(make_pod("a"))
    seen = recording(q)
    (qp,) = q.pop_burst(10)
    q.add_unschedulable(qp)  # no plugin: an error
    assert seen == {("backoff", "ScheduleAttemptFailure"): 1}


def test_a_burst_topped_up_from_backoff_counts_pop_from_backoff() -> None:
    q, _ = make_queue(hints={})
    q.add(make_pod("a"))
    (qp,) = q.pop_burst(10)
    q.add_unschedulable(qp, [names.NODE_RESOURCES_FIT])
    q.on_event(NODE_ADD, None, object())  # to backoffQ: it failed a moment ago
    seen = recording(q)
    assert names_of(q.pop_burst(10)) == ["a"]
    assert seen == {("active", "PopFromBackoffQ"): 1}


def test_parked_too_long_enters_on_unschedulable_timeout_and_activate_on_force_activate() -> None:
    q, clock = make_queue(pod_max_in_unschedulable_seconds=60)
    for name in ("a", "b"):
        q.add(make_pod(name))
    burst = q.pop_burst(10)
    for qp in burst:
        q.add_unschedulable(qp, [names.NODE_AFFINITY])
    seen = recording(q)
    q.activate([burst[1].key])
    assert seen == {("active", "ForceActivate"): 1}
    clock.step(61)
    q.flush()
    assert seen[("active", "UnschedulableTimeout")] == 1


def test_event_labels_follow_kube_schedulers_names() -> None:
    old = make_pod("a")
    new = make_pod("a", labels={"x": "y"})
    (event,) = pod_update_events(old, new)
    assert incoming_label(event) == "AssignedPodUpdatePodLabel"
    assert incoming_label(event, "UnschedulablePod") == "UnschedulablePodUpdatePodLabel"
    assert incoming_label(NODE_ADD) == "NodeAdd"
    assert incoming_label(ASSIGNED_POD_DELETE) == "AssignedPodDelete"
