"""Queueing hints: which node and pod events can help a pod a given filter rejected."""

from __future__ import annotations

from typing import Any

from kubesalvo.sched.informers import models
from kubesalvo.sched.queue import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    FakeClock,
    QueueName,
    Resource,
    SchedulingQueue,
)
from kubesalvo.sched.queue.hints import (
    fit_hint,
    node_affinity_hint,
    node_unschedulable_hint,
    taint_toleration_hint,
)

NODE_UPDATE = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE)


def pod(
    cpu: str = "2",
    *,
    node_selector: dict[str, str] | None = None,
    tolerations: list[models.Toleration] | None = None,
    node_name: str = "",
) -> models.Pod:
    return models.Pod(
        metadata=models.ObjectMeta(name="p", namespace="default", uid="uid-p"),
        spec=models.PodSpec(
            node_name=node_name,
            node_selector=node_selector or {},
            tolerations=tolerations or [],
            containers=[
                models.Container(
                    name="c",
                    resources=models.ResourceRequirements(requests={"cpu": cpu, "memory": "1Gi"}),
                )
            ],
        ),
    )


def node(
    cpu: str = "4",
    *,
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[models.Taint] | None = None,
    unschedulable: bool = False,
) -> models.Node:
    return models.Node(
        metadata=models.ObjectMeta(name="n", labels=labels or {}),
        spec=models.NodeSpec(unschedulable=unschedulable, taints=taints or []),
        status=models.NodeStatus(allocatable={"cpu": cpu, "memory": "8Gi", "pods": pods}),
    )


def test_fit_queues_for_an_added_node_that_could_hold_the_pod() -> None:
    assert fit_hint(pod("2"), NODE_ADD, None, node("4"))
    assert fit_hint(pod("4"), NODE_ADD, None, node("4"))


def test_fit_skips_an_added_node_too_small_or_full() -> None:
    assert not fit_hint(pod("8"), NODE_ADD, None, node("4"))
    assert not fit_hint(pod("1"), NODE_ADD, None, node("4", pods="0"))


def test_fit_queues_when_allocatable_grows_in_what_the_pod_asks_for() -> None:
    assert fit_hint(pod("3"), NODE_UPDATE, node("2"), node("4"))
    assert fit_hint(pod("1"), NODE_UPDATE, node("4", pods="10"), node("4", pods="20"))


def test_fit_skips_an_update_that_changed_nothing_the_pod_needs() -> None:
    assert not fit_hint(pod("1"), NODE_UPDATE, node("4"), node("4", labels={"a": "b"}))


def test_fit_queues_only_when_a_placed_pod_goes_away() -> None:
    assert fit_hint(pod(), ASSIGNED_POD_DELETE, pod(node_name="n"), None)
    assert not fit_hint(pod(), ASSIGNED_POD_DELETE, pod(), None)


def test_hints_queue_when_they_lack_the_objects() -> None:
    for hint in (fit_hint, node_affinity_hint, taint_toleration_hint, node_unschedulable_hint):
        assert hint(pod(), NODE_ADD, None, None)


def test_node_affinity_queues_for_a_node_that_starts_matching() -> None:
    p = pod(node_selector={"pool": "gpu"})
    assert node_affinity_hint(p, NODE_ADD, None, node(labels={"pool": "gpu"}))
    assert not node_affinity_hint(p, NODE_ADD, None, node(labels={"pool": "cpu"}))
    relabel = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_LABEL)
    cpu, gpu = node(labels={"pool": "cpu"}), node(labels={"pool": "gpu"})
    assert node_affinity_hint(p, relabel, cpu, gpu)
    # Matched before and after: the change is not what kept the pod out.
    assert not node_affinity_hint(p, relabel, gpu, node(labels={"pool": "gpu", "x": "y"}))


def test_taint_toleration_queues_when_the_pod_tolerates_the_node() -> None:
    gpu_taint = models.Taint(key="dedicated", value="gpu", effect="NoSchedule")
    tainted = node(taints=[gpu_taint])
    assert not taint_toleration_hint(pod(), NODE_ADD, None, tainted)
    tolerant = pod(tolerations=[models.Toleration(key="dedicated", operator="Exists")])
    assert taint_toleration_hint(tolerant, NODE_ADD, None, tainted)
    soft = node(taints=[models.Taint(key="x", effect="PreferNoSchedule")])
    assert taint_toleration_hint(pod(), NODE_ADD, None, soft)
    taint_update = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT)
    assert taint_toleration_hint(pod(), taint_update, tainted, node())


def test_node_unschedulable_queues_for_uncordoned_nodes() -> None:
    cordon = ClusterEvent(Resource.NODE, ActionType.UPDATE_NODE_TAINT)
    assert not node_unschedulable_hint(pod(), NODE_ADD, None, node(unschedulable=True))
    assert node_unschedulable_hint(pod(), cordon, node(unschedulable=True), node())
    assert not node_unschedulable_hint(pod(), cordon, node(), node(labels={"a": "b"}))
    cordon_tolerant = pod(
        tolerations=[models.Toleration(key="node.kubernetes.io/unschedulable", operator="Exists")]
    )
    assert node_unschedulable_hint(cordon_tolerant, NODE_ADD, None, node(unschedulable=True))


def test_queue_uses_the_hints_by_default() -> None:
    clock = FakeClock()
    q = SchedulingQueue(clock=clock)
    q.add(pod("8"))
    (qp,) = q.pop_burst(1)
    q.add_unschedulable(qp, ["NodeResourcesFit"])
    clock.step(60)
    assert q.on_event(NODE_ADD, None, node("4")) == 0
    assert q.where("uid-p") is QueueName.UNSCHEDULABLE
    assert q.on_event(NODE_ADD, None, node("16")) == 1
    assert q.where("uid-p") is QueueName.ACTIVE


def test_a_failing_hint_retries_the_pod() -> None:
    def broken(*_: Any) -> bool:
        raise RuntimeError("boom")

    clock = FakeClock()
    q = SchedulingQueue(clock=clock, hints={"NodeAffinity": broken})
    q.add(pod())
    (qp,) = q.pop_burst(1)
    q.add_unschedulable(qp, ["NodeAffinity"])
    clock.step(60)
    assert q.on_event(NODE_ADD, None, node()) == 1
