"""The scheduling queue: order, bursts, backoff timings, gates, dedup (fake clock)."""

from __future__ import annotations

import msgspec
import pytest

from kubesalvo.sched.config import parse_config
from kubesalvo.sched.queue import (
    NODE_ADD,
    QueueName,
    SchedulingQueue,
    register_queue_sort,
)
from kubesalvo.sched.queue.sorting import QUEUE_SORTS
from tests.helpers.queue import make_pod, make_queue, names_of


def test_priority_sort_pops_higher_priority_first_then_earlier() -> None:
    q, clock = make_queue()
    q.add(make_pod("low", priority=1))
    clock.step(1)
    q.add(make_pod("high-late", priority=100))
    q.add(make_pod("unset"))  # no priority counts as 0
    clock.step(1)
    q.add(make_pod("low-late", priority=1))
    q.add(make_pod("high-later", priority=100))
    assert names_of(q.pop_burst(10)) == ["high-late", "high-later", "low", "low-late", "unset"]


def test_equal_keys_keep_arrival_order() -> None:
    q, _ = make_queue()
    for i in range(20):
        q.add(make_pod(f"p{i:02d}"))
    assert names_of(q.pop_burst(100)) == [f"p{i:02d}" for i in range(20)]


def test_pop_burst_stops_at_its_maximum_and_keeps_the_rest() -> None:
    q, _ = make_queue()
    for i in range(5):
        q.add(make_pod(f"p{i}", priority=i))
    assert names_of(q.pop_burst(2)) == ["p4", "p3"]
    assert q.pending_counts()["active"] == 3
    assert q.in_flight == 2
    assert names_of(q.pop_burst(10)) == ["p2", "p1", "p0"]
    assert q.pop_burst(10) == []


def test_pop_counts_attempts_and_records_first_attempt_time() -> None:
    q, clock = make_queue()
    q.add(make_pod("a"))
    added_at = clock.now()
    clock.step(3)
    (qp,) = q.pop_burst(1)
    assert qp.attempts == 1
    assert qp.initial_attempt_timestamp == added_at
    assert q.where(qp.key) is QueueName.IN_FLIGHT


def test_done_forgets_the_pod() -> None:
    q, _ = make_queue()
    q.add(make_pod("a"))
    (qp,) = q.pop_burst(1)
    q.done(qp.key)
    assert qp.key not in q
    assert len(q) == 0


def test_adding_a_pod_twice_keeps_one_copy() -> None:
    q, _ = make_queue()
    q.add(make_pod("a", priority=1))
    q.add(make_pod("a", priority=5))
    assert len(q) == 1
    (qp,) = q.pop_burst(10)
    assert qp.priority == 5
    q.add(make_pod("a"))  # in flight: updates the object, no second copy
    assert q.pop_burst(10) == []
    assert len(q) == 1


def test_priority_update_reorders_the_active_queue() -> None:
    q, _ = make_queue()
    old = make_pod("a", priority=1)
    q.add(old)
    q.add(make_pod("b", priority=2))
    q.update(old, make_pod("a", priority=3))
    assert names_of(q.pop_burst(10)) == ["a", "b"]


def test_delete_removes_from_every_queue() -> None:
    q, clock = make_queue()
    for name in ("active", "backoff", "parked", "gated", "flying"):
        q.add(make_pod(name, gates=("g",) if name == "gated" else ()))
    burst = {qp.pod.metadata.name: qp for qp in q.pop_burst(10)}
    assert set(burst) == {"active", "backoff", "parked", "flying"}
    q.add_unschedulable(burst["backoff"])  # an error: error backoff
    q.add_unschedulable(burst["parked"], ["NodeAffinity"])
    q.done(burst["active"].key)
    q.add(make_pod("active"))
    assert q.pending_counts() == {"active": 1, "backoff": 1, "unschedulable": 1, "gated": 1}
    for name in ("active", "backoff", "parked", "gated", "flying"):
        q.delete(make_pod(name))
    assert q.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert q.add_unschedulable(burst["flying"], ["NodeAffinity"]) is None
    assert len(q) == 0
    clock.step(100)
    assert q.pop_burst(10) == []


def test_backoff_doubles_from_initial_to_max() -> None:
    q, _ = make_queue(pod_initial_backoff_seconds=1, pod_max_backoff_seconds=10)
    q.add(make_pod("a"))
    (qp,) = q.pop_burst(1)
    waits = []
    for _ in range(6):
        qp.unschedulable_count += 1
        waits.append(q.backoff_seconds(qp))
    assert waits == [1, 2, 4, 8, 10, 10]


def test_backoff_after_failure_waits_before_the_pod_is_ready_again() -> None:
    q, clock = make_queue(
        pod_initial_backoff_seconds=2, pod_max_backoff_seconds=8, pop_from_backoff=False
    )
    q.add(make_pod("a"))
    expected = [2, 4, 8, 8]
    for wait in expected:
        (qp,) = q.pop_burst(1)
        # Rejected, but an event during the attempt makes it worth retrying after backoff.
        q.on_event(NODE_ADD)
        assert q.add_unschedulable(qp, ["NodeResourcesFit"]) is QueueName.BACKOFF
        clock.step(wait - 0.001)
        assert q.pop_burst(1) == []
        assert q.next_wakeup() == pytest.approx(clock.now() + 0.001)
        clock.step(0.001)
        assert q.where(qp.key) is QueueName.BACKOFF
    (qp,) = q.pop_burst(1)
    assert qp.attempts == len(expected) + 1


def test_error_failures_use_their_own_count_and_do_not_pop_early() -> None:
    q, clock = make_queue(pod_initial_backoff_seconds=1, pod_max_backoff_seconds=60)
    q.add(make_pod("a"))
    (qp,) = q.pop_burst(1)
    assert q.add_unschedulable(qp) is QueueName.BACKOFF  # no plugin: an error
    assert (qp.consecutive_errors, qp.unschedulable_count) == (1, 0)
    assert q.pop_burst(10) == []  # error backoff is never cut short
    clock.step(1)
    (qp,) = q.pop_burst(1)
    q.add_unschedulable(qp)
    assert q.backoff_seconds(qp) == 2
    clock.step(2)
    (qp,) = q.pop_burst(1)
    # A rejection resets the error count.
    q.add_unschedulable(qp, ["NodeAffinity"])
    assert (qp.consecutive_errors, qp.unschedulable_count) == (0, 1)


def test_idle_burst_takes_rejected_pods_from_backoff_early() -> None:
    q, _ = make_queue(pod_initial_backoff_seconds=5, pod_max_backoff_seconds=5)
    q.add(make_pod("a"))
    (qp,) = q.pop_burst(1)
    q.on_event(NODE_ADD)
    assert q.add_unschedulable(qp, ["NodeResourcesFit"]) is QueueName.BACKOFF
    q.add(make_pod("b"))
    # activeQ first, then the backoff queue fills the burst.
    assert names_of(q.pop_burst(10)) == ["b", "a"]


def test_gated_pod_waits_until_its_gates_are_removed() -> None:
    q, _ = make_queue()
    gated = make_pod("a", gates=("example.com/wait",))
    q.add(gated)
    assert q.where("uid-a") is QueueName.GATED
    assert q.pending_counts()["gated"] == 1
    assert q.pop_burst(10) == []
    still = make_pod("a", gates=("example.com/wait",), labels={"x": "y"})
    q.update(gated, still)
    assert q.where("uid-a") is QueueName.GATED
    released = make_pod("a")
    q.update(still, released)
    assert q.where("uid-a") is QueueName.ACTIVE
    (qp,) = q.pop_burst(1)
    assert qp.gating_plugin == ""


def test_gates_are_ignored_when_the_profile_disables_scheduling_gates() -> None:
    q, _ = make_queue(pre_enqueue={"kubesalvo": ()})
    q.add(make_pod("a", gates=("g",)))
    assert q.where("uid-a") is QueueName.ACTIVE


def test_gated_time_does_not_count_toward_the_first_attempt() -> None:
    q, clock = make_queue()
    q.add(make_pod("a", gates=("g",)))
    clock.step(30)
    q.update(make_pod("a", gates=("g",)), make_pod("a"))
    (qp,) = q.pop_burst(1)
    assert qp.initial_attempt_timestamp == clock.now()


def test_queue_from_config_takes_backoffs_sort_and_gates() -> None:
    config = parse_config(
        """
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        podInitialBackoffSeconds: 3
        podMaxBackoffSeconds: 30
        kubesalvo: {podMaxInUnschedulablePodsDuration: 2m}
        profiles:
        - schedulerName: a
        - schedulerName: b
          plugins: {preEnqueue: {disabled: [{name: SchedulingGates}]}}
        """
    )
    q = SchedulingQueue.from_config(config)
    assert (q.initial_backoff, q.max_backoff, q.max_in_unschedulable) == (3, 30, 120)
    q.add(make_pod("gated-a", gates=("g",), scheduler="a"))
    q.add(make_pod("free-b", gates=("g",), scheduler="b"))
    assert q.where("uid-gated-a") is QueueName.GATED
    assert q.where("uid-free-b") is QueueName.ACTIVE


def test_unknown_queue_sort_is_refused() -> None:
    with pytest.raises(ValueError, match="NoSuchSort"):
        SchedulingQueue(queue_sort="NoSuchSort")


def test_registered_queue_sort_orders_the_active_queue() -> None:
    register_queue_sort("ByName", lambda qp: (qp.pod.metadata.name,))
    try:
        q, _ = make_queue(queue_sort="ByName")
        for name in ("c", "a", "b"):
            q.add(make_pod(name, priority=ord(name)))
        assert names_of(q.pop_burst(10)) == ["a", "b", "c"]
    finally:
        del QUEUE_SORTS["ByName"]


def test_add_unschedulable_of_a_queued_pod_is_refused() -> None:
    q, _ = make_queue()
    q.add(make_pod("a"))
    qp = q.get("uid-a")
    assert qp is not None
    with pytest.raises(ValueError, match="already queued"):
        q.add_unschedulable(qp, ["NodeAffinity"])


def test_failed_bind_after_done_requeues_with_error_backoff() -> None:
    q, clock = make_queue()
    q.add(make_pod("a"))
    (qp,) = q.pop_burst(1)
    q.done(qp.key)
    assert q.add_unschedulable(qp) is QueueName.BACKOFF
    clock.step(1)
    assert names_of(q.pop_burst(1)) == ["a"]


def test_pod_updated_in_flight_comes_back_with_its_newest_object() -> None:
    q, _ = make_queue()
    q.add(make_pod("a", priority=1))
    (qp,) = q.pop_burst(1)
    q.update(make_pod("a", priority=1), make_pod("a", priority=7))
    q.add_unschedulable(qp, ["NodeAffinity"])
    parked = q.get("uid-a")
    assert parked is not None and parked.priority == 7


def test_listing_shows_every_pod_once() -> None:
    q, _ = make_queue()
    q.add(make_pod("a"))
    q.add(make_pod("b", priority=3))
    q.add(make_pod("g", gates=("x",)))
    listing = q.listing()
    assert [(n, w) for n, w, _ in listing] == [
        ("default/b", QueueName.ACTIVE),
        ("default/a", QueueName.ACTIVE),
        ("default/g", QueueName.GATED),
    ]


def test_the_unordered_listing_holds_every_pod_once_with_its_place() -> None:
    q, _ = make_queue()
    for pod in (make_pod("a"), make_pod("b", priority=3), make_pod("g", gates=("x",))):
        q.add(pod)
    (popped,) = q.pop_burst(1)
    unordered = sorted((qp.name, where) for where, qp in q.unordered_listing())
    assert unordered == sorted((n, w) for n, w, _ in q.listing())
    assert (popped.name, QueueName.IN_FLIGHT) in unordered and len(unordered) == 3


def test_pods_round_trip_through_msgspec_unchanged() -> None:
    # The queue stores the informers' objects as they are; it must not copy or alter them.
    q, _ = make_queue()
    pod = make_pod("a", labels={"k": "v"})
    before = msgspec.json.encode(pod)
    q.add(pod)
    (qp,) = q.pop_burst(1)
    assert qp.pod is pod and msgspec.json.encode(qp.pod) == before


def test_dynamic_resources_holds_a_pod_back_until_its_claims_exist() -> None:
    # kube-scheduler's default profile has DynamicResources at preEnqueue.
    config = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    (profile,) = parse_config(config).profiles
    assert "DynamicResources" in profile.pre_enqueue
    q, _ = make_queue(pre_enqueue={"kubesalvo": profile.pre_enqueue})
    missing = {"uid-a"}
    q.claims_missing = lambda pod: pod.metadata.uid in missing
    with_claim = make_pod("a")
    with_claim.spec.resource_claims = [{"name": "gpu", "resourceClaimName": "one-gpu"}]
    q.add(with_claim)
    q.add(make_pod("b"))  # without claims: never asked about
    assert q.where("uid-a") is QueueName.GATED and q.where("uid-b") is QueueName.ACTIVE
    assert q.release_gated("DynamicResources") == 0  # still missing: held again
    missing.clear()
    assert q.release_gated("DynamicResources") == 1
    assert q.where("uid-a") is QueueName.ACTIVE


def test_a_claim_made_releases_only_the_pods_named_as_waiting_for_it() -> None:
    config = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    (profile,) = parse_config(config).profiles
    q, _ = make_queue(pre_enqueue={"kubesalvo": profile.pre_enqueue})
    missing = {"uid-a", "uid-b"}
    q.claims_missing = lambda pod: pod.metadata.uid in missing
    for name in ("a", "b"):
        pod = make_pod(name)
        pod.spec.resource_claims = [{"name": "gpu", "resourceClaimName": f"claim-{name}"}]
        q.add(pod)
    missing.clear()
    # a's claim came: b is not looked at, though it would pass now too.
    assert q.release_gated("DynamicResources", keys=["uid-a", "uid-gone"]) == 1
    assert q.where("uid-a") is QueueName.ACTIVE and q.where("uid-b") is QueueName.GATED
    assert q.release_gated("DynamicResources", keys=["uid-b"]) == 1
