"""The queue's nominator: nominated pods listed for the cycle's reservations, without the
API server (the rooms themselves: tests/core/test_reservations.py; on the real control
plane, with preemption writing the nomination: test_run_nominated.py).
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesalvo.sched.informers.models import Pod
from kubesalvo.sched.queue import ASSIGNED_POD_DELETE, QueueName, SchedulingQueue
from tests.core.test_reservations import pod

# --- the nominator ------------------------------------------------------------------------


def decoded(obj: dict[str, Any]) -> Pod:
    return msgspec.convert(obj, Pod)


def test_the_queue_lists_nominated_pods_and_forgets_them_once_bound():
    queue = SchedulingQueue()
    queue.add(decoded(pod("a", 10, nominated="n0")))
    queue.add(decoded(pod("b", 10)))
    assert [(qp.name, node) for qp, node in queue.nominated_pods()] == [("ns/a", "n0")]
    (popped,) = [qp for qp in queue.pop_burst(10) if qp.key == "uid-a"]
    queue.done(popped.key)
    assert queue.nominated_pods() == []


def test_a_nomination_written_here_counts_before_the_watch_shows_it():
    queue = SchedulingQueue()
    queue.add(decoded(pod("a", 10)))
    queue.nominate("uid-a", "n1")
    assert [node for _, node in queue.nominated_pods()] == ["n1"]
    # A late update from before the write (no nomination on either side) keeps it.
    queue.update(decoded(pod("a", 10)), decoded(pod("a", 10)))
    assert [node for _, node in queue.nominated_pods()] == ["n1"]
    # The watch shows it: the pod's status is the truth from now on.
    queue.update(decoded(pod("a", 10)), decoded(pod("a", 10, nominated="n1")))
    queue.update(decoded(pod("a", 10, nominated="n1")), decoded(pod("a", 10)))
    assert queue.nominated_pods() == []


def test_a_nomination_cleared_here_stops_holding_the_room_at_once():
    queue = SchedulingQueue()
    queue.add(decoded(pod("a", 10, nominated="n0")))
    queue.nominate("uid-a", "")
    assert queue.nominated_pods() == []
    (qp,) = queue.pop_burst(1)
    assert queue.nomination(qp) == ""


def test_a_burst_topped_up_from_backoff_is_in_queue_order():
    queue = SchedulingQueue(pod_initial_backoff_seconds=60)
    queue.add(decoded(pod("preemptor", 10_000)))
    (preemptor,) = queue.pop_burst(10)
    # Its victim leaves during the attempt: back to the backoffQ, backing off for a minute.
    victim = pod("victim", 0)
    victim["spec"]["nodeName"] = "n0"
    queue.on_event(ASSIGNED_POD_DELETE, decoded(victim), None)
    assert queue.add_unschedulable(preemptor, ["NodeResourcesFit"]) is QueueName.BACKOFF
    queue.add(decoded(pod("later", 1000)))
    assert [qp.name for qp in queue.pop_burst(10)] == ["ns/preemptor", "ns/later"]
