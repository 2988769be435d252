"""The queue and gangs: members popped together, GroupPriority's order (fake clock)."""

from __future__ import annotations

from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.sched.informers import models
from kubesalvo.sched.queue import ASSIGNED_POD_ADD, ASSIGNED_POD_DELETE, NODE_ADD, QueueName
from tests.helpers.queue import make_pod, make_queue, names_of

GANG = {"podGroup": "g", "minAvailable": "3"}


def test_popping_one_member_brings_its_waiting_siblings_into_the_burst() -> None:
    q, _clock = make_queue()
    a, b, c = (make_pod(f"g{i}", labels=GANG) for i in range(3))
    for pod in (a, b):
        q.add(pod)
    burst = q.pop_burst(10)
    q.add_unschedulable(burst[0], ["Coscheduling"])  # parked
    q.add_unschedulable(burst[1], [])  # an error: backing off
    assert q.where("uid-g0") is QueueName.UNSCHEDULABLE
    assert q.where("uid-g1") is QueueName.BACKOFF
    q.add(make_pod("solo", priority=5))
    q.add(c)  # the last member arrives
    burst = q.pop_burst(2)  # room for 2, but the gang comes whole
    assert names_of(burst) == ["solo", "g2", "g0", "g1"]
    assert all(q.where(qp.key) is QueueName.IN_FLIGHT for qp in burst)
    assert q.gang_members(gang.GroupKey("default", "g")) == {
        f"uid-g{i}": QueueName.IN_FLIGHT for i in range(3)
    }


def test_a_gated_member_stays_gated_and_bound_members_leave_the_gang() -> None:
    q, _ = make_queue()
    q.add(make_pod("g0", labels=GANG))
    q.add(make_pod("g1", labels=GANG, gates=("wait",)))
    burst = q.pop_burst(10)
    assert names_of(burst) == ["g0"]
    group = gang.GroupKey("default", "g")
    assert q.gang_members(group) == {"uid-g0": QueueName.IN_FLIGHT, "uid-g1": QueueName.GATED}
    q.done("uid-g0")
    q.delete("uid-g1")
    assert q.gang_members(group) == {}


def test_a_relabelled_pod_moves_between_gangs() -> None:
    q, _ = make_queue()
    q.add(make_pod("p", labels=GANG))
    q.update(None, make_pod("p", labels={"podGroup": "other"}))
    assert q.gang_members(gang.GroupKey("default", "g")) == {}
    assert q.gang_members(gang.GroupKey("default", "other")) == {"uid-p": QueueName.ACTIVE}


def test_retry_after_backoff_moves_parked_pods_to_backoff() -> None:
    q, clock = make_queue()
    q.add(make_pod("g0", labels=GANG))
    (qp,) = q.pop_burst(1)
    q.add_unschedulable(qp, ["Coscheduling"])
    q.retry_after_backoff(["uid-g0", "unknown"])
    assert q.where("uid-g0") is QueueName.BACKOFF
    clock.step(2)
    assert names_of(q.pop_burst(1)) == ["g0"]


def qos_pod(name: str, qos: str, priority: str | None) -> models.Pod:
    pod = make_pod(name, labels={"groupPriority": priority} if priority is not None else {})
    container = pod.spec.containers[0]
    if qos == "G":
        container.resources = models.ResourceRequirements(
            requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}
        )
    elif qos == "BE":
        container.resources = None
    return pod


def test_group_priority_sorts_by_label_then_qos_class_then_queue_time() -> None:
    q, clock = make_queue(queue_sort="GroupPriority")
    for name, qos, priority in [
        ("be-hi", "BE", "5"),
        ("b-none", "B", None),
        ("g-bad", "G", "urgent"),  # not an integer: 0
        ("b-hi", "B", "5"),
        ("g-hi", "G", "5"),
        ("g-neg", "G", "-1"),
        ("be-none", "BE", None),
    ]:
        q.add(qos_pod(name, qos, priority))
        clock.step(1)
    assert names_of(q.pop_burst(10)) == [
        "g-hi", "b-hi", "be-hi", "g-bad", "b-none", "be-none", "g-neg",
    ]  # fmt: skip


def test_group_priority_pops_a_gang_whole_even_with_low_priority_members() -> None:
    q, _ = make_queue(queue_sort="GroupPriority")
    q.add(make_pod("top", labels={**GANG, "groupPriority": "9"}))
    for i in range(5):
        q.add(make_pod(f"mid{i}", labels={"groupPriority": "5"}))
    q.add(make_pod("low", labels={**GANG, "groupPriority": "0"}))
    assert names_of(q.pop_burst(2)) == ["top", "mid0", "low"]
    assert q.on_event(NODE_ADD) == 0


def test_pod_level_resources_decide_the_qos_class() -> None:
    q, _ = make_queue(queue_sort="GroupPriority")
    burstable = qos_pod("burstable", "B", None)
    pod_level = qos_pod("pod-level", "BE", None)
    pod_level.spec.resources = models.ResourceRequirements(
        requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}
    )
    q.add(burstable)
    q.add(pod_level)
    assert names_of(q.pop_burst(10)) == ["pod-level", "burstable"]


def test_a_waiting_gang_wakes_for_its_own_members_not_for_other_pods() -> None:
    q, clock = make_queue()
    q.add(make_pod("g0", labels=GANG))
    (qp,) = q.pop_burst(1)
    q.add_unschedulable(qp, ["Coscheduling"])
    clock.step(5)  # past its backoff
    stranger = make_pod("web", labels={"app": "web"})
    stranger.spec.node_name = "node-a"
    assert q.on_event(ASSIGNED_POD_ADD, None, stranger) == 0
    assert q.on_event(ASSIGNED_POD_DELETE, stranger, None) == 0
    member = make_pod("g1", labels=GANG)
    member.spec.node_name = "node-a"  # bound by someone else
    assert q.on_event(ASSIGNED_POD_ADD, None, member) == 1
    assert q.where("uid-g0") is QueueName.ACTIVE
