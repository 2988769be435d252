"""The queue's reaction to cluster events: parked pods brought back by the events their
rejecting plugins registered, in-flight events, the unschedulable timeout (fake clock)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesalvo.sched.informers import models
from kubesalvo.sched.queue import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    EventResource,
    QueueName,
    SchedulingQueue,
    node_update_events,
    pod_update_events,
)
from kubesalvo.sched.queue.cluster_events import PLUGIN_EVENTS
from tests.helpers.queue import make_pod, make_queue, names_of


def park(q: SchedulingQueue, pod: models.Pod, *plugins: str, pending: tuple[str, ...] = ()) -> Any:
    """Add a pod, pop it and report it rejected by ``plugins``: it ends up parked."""
    q.add(pod)
    (qp,) = [p for p in q.pop_burst(1000) if p.key == pod.metadata.uid]
    assert q.add_unschedulable(qp, plugins, pending) is QueueName.UNSCHEDULABLE
    return qp


def node(labels: dict[str, str] | None = None, **spec: Any) -> models.Node:
    return models.Node(
        metadata=models.ObjectMeta(name="n1", labels=labels or {}),
        spec=models.NodeSpec(**spec),
        status=models.NodeStatus(allocatable={"cpu": "4"}),
    )


NODE_LABEL = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)
NODE_TAINT = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)
NODE_CONDITION = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_CONDITION)


def test_node_added_brings_back_pods_that_did_not_fit() -> None:
    q, clock = make_queue(pod_initial_backoff_seconds=1, pod_max_backoff_seconds=10)
    park(q, make_pod("fit"), "NodeResourcesFit")
    clock.step(5)  # past its one-second backoff: straight to activeQ
    assert q.on_event(NODE_ADD) == 1
    assert q.where("uid-fit") is QueueName.ACTIVE


def test_event_during_backoff_moves_the_pod_to_backoff() -> None:
    q, _ = make_queue(pod_initial_backoff_seconds=10, pod_max_backoff_seconds=10)
    park(q, make_pod("fit"), "NodeResourcesFit")
    q.on_event(NODE_ADD)
    assert q.where("uid-fit") is QueueName.BACKOFF


@pytest.mark.parametrize(
    ("event", "moved", "stayed"),
    [
        (NODE_LABEL, {"affinity", "spread", "interpod"}, {"fit", "taint", "ports"}),
        (NODE_TAINT, {"taint", "unschedulable", "spread"}, {"affinity", "fit", "ports"}),
        (NODE_CONDITION, set(), {"affinity", "fit", "taint", "ports", "spread"}),
        (
            ASSIGNED_POD_DELETE,
            {"fit", "ports", "interpod", "spread"},
            {"affinity", "taint", "unschedulable"},
        ),
        (ASSIGNED_POD_ADD, {"interpod", "spread"}, {"fit", "ports", "affinity"}),
    ],
)
def test_events_bring_back_only_pods_whose_rejecting_plugins_registered_them(
    event: ClusterEvent, moved: set[str], stayed: set[str]
) -> None:
    q, clock = make_queue()
    plugins = {
        "affinity": "NodeAffinity",
        "fit": "NodeResourcesFit",
        "taint": "TaintToleration",
        "unschedulable": "NodeUnschedulable",
        "ports": "NodePorts",
        "interpod": "InterPodAffinity",
        "spread": "PodTopologySpread",
    }
    for name, plugin in plugins.items():
        park(q, make_pod(name), plugin)
    clock.step(60)
    q.on_event(event)
    for name in moved:
        assert q.where(f"uid-{name}") is QueueName.ACTIVE, name
    for name in stayed:
        assert q.where(f"uid-{name}") is QueueName.UNSCHEDULABLE, name


def test_any_of_several_rejecting_plugins_is_enough() -> None:
    q, clock = make_queue()
    park(q, make_pod("a"), "NodeAffinity", "NodeResourcesFit")
    clock.step(60)
    q.on_event(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE))
    assert q.where("uid-a") is QueueName.ACTIVE


def test_pod_filter_narrows_the_pods_an_event_moves() -> None:
    q, clock = make_queue()
    park(q, make_pod("a", labels={"app": "x"}), "InterPodAffinity")
    park(q, make_pod("b", labels={"app": "y"}), "InterPodAffinity")
    clock.step(60)
    moved = q.on_event(
        ASSIGNED_POD_ADD, pod_filter=lambda qp: qp.pod.metadata.labels.get("app") == "x"
    )
    assert moved == 1
    assert q.where("uid-a") is QueueName.ACTIVE
    assert q.where("uid-b") is QueueName.UNSCHEDULABLE


def test_a_hint_can_skip_an_event() -> None:
    seen: list[tuple[str, Any]] = []

    def only_big_nodes(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
        seen.append((pod.metadata.name, new))
        return new is not None and new.status.allocatable.get("cpu") == "64"

    q, clock = make_queue(hints={"NodeResourcesFit": only_big_nodes})
    park(q, make_pod("a"), "NodeResourcesFit")
    clock.step(60)
    small = node()
    q.on_event(NODE_ADD, None, small)
    assert q.where("uid-a") is QueueName.UNSCHEDULABLE
    big = models.Node(status=models.NodeStatus(allocatable={"cpu": "64"}))
    q.on_event(NODE_ADD, None, big)
    assert q.where("uid-a") is QueueName.ACTIVE
    assert seen == [("a", small), ("a", big)]


def test_pending_plugin_skips_the_backoff() -> None:
    q, _ = make_queue(pod_initial_backoff_seconds=10, pod_max_backoff_seconds=10)
    park(q, make_pod("a"), "NodeAffinity", pending=("NodeResourcesFit",))
    q.on_event(NODE_ADD)
    assert q.where("uid-a") is QueueName.ACTIVE


def test_a_plugin_that_registers_nothing_is_retried_on_any_event() -> None:
    q, clock = make_queue()
    park(q, make_pod("a"), "SomeOutOfTreePlugin")
    clock.step(60)
    q.on_event(NODE_CONDITION)
    assert q.where("uid-a") is QueueName.ACTIVE


def test_wildcard_event_moves_every_parked_pod() -> None:
    q, clock = make_queue()
    park(q, make_pod("a"), "NodeAffinity")
    park(q, make_pod("b"), "NodePorts")
    clock.step(60)
    assert q.on_event(ClusterEvent(EventResource.WILDCARD, ActionType.ALL)) == 2


def test_event_during_the_attempt_sends_the_failed_pod_back_to_backoff() -> None:
    q, clock = make_queue(pod_initial_backoff_seconds=1, pod_max_backoff_seconds=1)
    q.add(make_pod("helped"))
    q.add(make_pod("not-helped"))
    helped, not_helped = q.pop_burst(10)
    q.on_event(ASSIGNED_POD_DELETE)  # nothing parked yet: remembered for the pods in flight
    assert q.add_unschedulable(helped, ["NodeResourcesFit"]) is QueueName.BACKOFF
    assert q.add_unschedulable(not_helped, ["NodeAffinity"]) is QueueName.UNSCHEDULABLE
    clock.step(1)
    assert names_of(q.pop_burst(10)) == ["helped"]


def test_event_before_the_attempt_does_not_count_for_it() -> None:
    q, _ = make_queue()
    q.add(make_pod("a"))
    q.on_event(NODE_ADD)  # nothing in flight: not remembered
    (qp,) = q.pop_burst(1)
    assert q.add_unschedulable(qp, ["NodeResourcesFit"]) is QueueName.UNSCHEDULABLE


def test_irrelevant_event_during_the_attempt_parks_the_pod() -> None:
    q, _ = make_queue()
    q.add(make_pod("a"))
    (qp,) = q.pop_burst(1)
    q.on_event(NODE_LABEL)
    assert q.add_unschedulable(qp, ["NodeResourcesFit"]) is QueueName.UNSCHEDULABLE


def test_in_flight_update_of_one_pod_does_not_help_another() -> None:
    q, _ = make_queue()
    q.add(make_pod("a"))
    q.add(make_pod("b"))
    a, b = q.pop_burst(2)
    toleration = [models.Toleration(key="k", operator="Exists")]
    q.update(make_pod("a"), make_pod("a", tolerations=toleration))
    assert q.add_unschedulable(b, ["TaintToleration"]) is QueueName.UNSCHEDULABLE
    assert q.add_unschedulable(a, ["TaintToleration"]) is QueueName.BACKOFF


def test_unschedulable_pods_are_retried_after_the_maximum_wait() -> None:
    q, clock = make_queue()
    park(q, make_pod("a"), "NodeAffinity")
    clock.step(30)
    park(q, make_pod("b"), "NodeAffinity")
    assert q.next_wakeup() == pytest.approx(clock.now() - 30 + 300)
    clock.step(270)  # a has waited exactly 300s: not more than the maximum yet
    assert q.pop_burst(10) == []
    clock.step(1)
    assert names_of(q.pop_burst(10)) == ["a"]
    assert q.where("uid-b") is QueueName.UNSCHEDULABLE
    clock.step(30)
    assert names_of(q.pop_burst(10)) == ["b"]


def test_gated_pods_are_not_flushed() -> None:
    q, clock = make_queue()
    q.add(make_pod("g", gates=("x",)))
    clock.step(3600)
    assert q.pop_burst(10) == []
    assert q.where("uid-g") is QueueName.GATED


def test_parked_pod_update_that_could_help_moves_it() -> None:
    q, clock = make_queue()
    park(q, make_pod("a"), "TaintToleration")
    clock.step(60)
    q.update(make_pod("a"), make_pod("a", labels={"new": "label"}))
    assert q.where("uid-a") is QueueName.UNSCHEDULABLE
    toleration = [models.Toleration(key="k", operator="Exists")]
    q.update(make_pod("a"), make_pod("a", tolerations=toleration))
    assert q.where("uid-a") is QueueName.ACTIVE


def test_status_only_update_of_a_parked_pod_changes_nothing() -> None:
    q, clock = make_queue()
    park(q, make_pod("a"), "InterPodAffinity")
    clock.step(60)
    old = make_pod("a")
    new = make_pod("a")
    new.status.conditions = [models.PodCondition(type="PodScheduled", status="False")]
    q.update(old, new)
    assert q.where("uid-a") is QueueName.UNSCHEDULABLE


def test_activate_moves_parked_and_backing_off_pods() -> None:
    q, _ = make_queue(pod_initial_backoff_seconds=10, pod_max_backoff_seconds=10)
    park(q, make_pod("parked"), "Coscheduling")
    q.add(make_pod("b"))
    (b,) = q.pop_burst(1)
    q.add_unschedulable(b)
    assert q.where("uid-b") is QueueName.BACKOFF
    q.activate(["uid-parked", "uid-b", "uid-unknown"])
    assert q.where("uid-parked") is QueueName.ACTIVE
    assert q.where("uid-b") is QueueName.ACTIVE


def test_activation_of_a_pod_in_flight_counts_when_it_fails() -> None:
    q, _ = make_queue()
    q.add(make_pod("a"))
    (qp,) = q.pop_burst(1)
    q.activate(["uid-a"])
    assert q.add_unschedulable(qp, ["Coscheduling"]) is QueueName.BACKOFF


def test_on_active_hook_fires_when_pods_become_ready() -> None:
    woken: list[int] = []
    q, clock = make_queue(on_active=lambda: woken.append(1))
    q.add(make_pod("a"))
    assert len(woken) == 1
    q.add(make_pod("g", gates=("x",)))
    assert len(woken) == 1
    park(q, make_pod("p"), "NodeAffinity")
    clock.step(60)
    q.on_event(NODE_LABEL)
    assert len(woken) >= 3


def test_node_update_events_name_what_changed() -> None:
    base = node(labels={"zone": "a"})
    relabelled = node(labels={"zone": "b"})
    cordoned = node(labels={"zone": "a"}, unschedulable=True)
    tainted = node(labels={"zone": "a"}, taints=[models.Taint(key="k", effect="NoSchedule")])
    assert [e.action for e in node_update_events(base, relabelled)] == [
        ActionType.UPDATE_NODE_LABEL
    ]
    assert [e.action for e in node_update_events(base, cordoned)] == [ActionType.UPDATE_NODE_TAINT]
    assert [e.action for e in node_update_events(base, tainted)] == [ActionType.UPDATE_NODE_TAINT]
    assert node_update_events(base, node(labels={"zone": "a"})) == []
    assert str(node_update_events(base, relabelled)[0]) == "NodeUpdateNodeLabel"


def test_pod_update_events_name_what_changed() -> None:
    base = make_pod("a", gates=("g",), cpu="500m")
    assert [e.action for e in pod_update_events(base, make_pod("a", cpu="500m"))] == [
        ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    ]
    smaller = make_pod("a", gates=("g",), cpu="250m")
    assert [e.action for e in pod_update_events(base, smaller)] == [
        ActionType.UPDATE_POD_SCALE_DOWN
    ]
    bigger = make_pod("a", gates=("g",), cpu="1")
    assert [e.action for e in pod_update_events(base, bigger)] == [ActionType.UPDATE_OTHER]
    same = make_pod("a", gates=("g",), cpu="500m")
    same.status.phase = "Pending"
    assert pod_update_events(base, same) == []


def test_every_default_filter_plugin_registers_events() -> None:
    from kubesalvo.core.plugins import registry

    for plugin in registry.DEFAULT_FILTER_ORDER:
        assert PLUGIN_EVENTS.get(plugin), plugin


def test_replicas_parked_together_are_judged_once_per_event() -> None:
    calls: list[str] = []

    def counting(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
        calls.append(pod.metadata.name)
        return False

    q, clock = make_queue(hints={"NodeResourcesFit": counting})
    for i in range(50):
        q.add(make_pod(f"replica-{i}", labels={"app": "web"}))
    q.add(make_pod("other", labels={"app": "db"}))
    for qp in q.pop_burst(100):
        q.add_unschedulable(qp, ["NodeResourcesFit"])
    clock.step(60)
    assert q.on_event(NODE_ADD) == 0
    assert len(calls) == 2  # one per group: the replicas, and "other"


def test_updating_a_parked_pod_keeps_its_place_in_the_timeout_order() -> None:
    q, clock = make_queue()
    park(q, make_pod("first"), "NodeAffinity")
    clock.step(10)
    park(q, make_pod("second"), "NodeAffinity")
    q.update(make_pod("first"), make_pod("first", labels={"x": "y"}))
    clock.step(291)  # first has waited 301s, second 291s
    assert names_of(q.pop_burst(10)) == ["first"]


def test_random_operations_keep_every_pod_in_exactly_one_place() -> None:
    import random

    events = [NODE_ADD, ASSIGNED_POD_DELETE, ASSIGNED_POD_ADD, NODE_CONDITION, NODE_LABEL]
    plugins = ["NodeResourcesFit", "NodeAffinity", "InterPodAffinity", "TaintToleration"]
    for seed in range(5):
        rng = random.Random(seed)
        q, clock = make_queue(pod_initial_backoff_seconds=1, pod_max_backoff_seconds=8)
        flying: dict[str, Any] = {}
        for _ in range(600):
            op = rng.random()
            name = f"p{rng.randrange(40)}"
            if op < 0.3:
                gates = ("g",) if rng.random() < 0.1 else ()
                q.add(make_pod(name, priority=rng.randrange(3), gates=gates))
            elif op < 0.4:
                q.update(make_pod(name), make_pod(name, labels={"v": str(rng.randrange(3))}))
            elif op < 0.5:
                q.delete(make_pod(name))
            elif op < 0.7:
                for qp in q.pop_burst(rng.randrange(1, 8)):
                    assert qp.key not in flying, "popped twice"
                    flying[qp.key] = qp
            elif op < 0.85 and flying:
                key = rng.choice(sorted(flying))
                qp = flying.pop(key)
                if rng.random() < 0.3:
                    q.done(key)
                else:
                    rejected = rng.sample(plugins, rng.randrange(0, 3))
                    q.add_unschedulable(qp, rejected)
            elif op < 0.95:
                q.on_event(rng.choice(events))
            else:
                clock.step(rng.choice([0.5, 1, 5, 60, 400]))
            counts = q.pending_counts()
            assert sum(counts.values()) + q.in_flight == len(q)
            assert q.in_flight == len(flying)
            listing = q.listing()
            assert len({key for key, _, _ in listing}) == len(listing) == len(q)
            for _, where, qp in listing:
                assert q.where(qp.key) is where
            # The in-flight event log keeps exactly what the oldest attempt may still need.
            flights = q._in_flight.values()
            assert q._log_base == min((f.since for f in flights), default=q._log_base)
            assert flights or not q._log
