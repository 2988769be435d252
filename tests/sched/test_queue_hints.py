"""Queueing hints: which node and pod events can help a pod a given filter rejected."""

from __future__ import annotations

from typing import Any

from kubesalvo.sched.informers import models
from kubesalvo.sched.informers.resources import ResourceClaim
from kubesalvo.sched.queue import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    EventResource,
    QueueName,
)
from kubesalvo.sched.queue.hints import (
    dynamic_resources_hint,
    fit_hint,
    inter_pod_affinity_hint,
    node_affinity_hint,
    node_unschedulable_hint,
    pod_topology_spread_hint,
    taint_toleration_hint,
)
from tests.helpers.queue import make_queue

NODE_UPDATE = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE)


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
    relabel = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)
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
    taint_update = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)
    assert taint_toleration_hint(pod(), taint_update, tainted, node())


def test_node_unschedulable_queues_for_uncordoned_nodes() -> None:
    cordon = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)
    assert not node_unschedulable_hint(pod(), NODE_ADD, None, node(unschedulable=True))
    assert node_unschedulable_hint(pod(), cordon, node(unschedulable=True), node())
    assert not node_unschedulable_hint(pod(), cordon, node(), node(labels={"a": "b"}))
    cordon_tolerant = pod(
        tolerations=[models.Toleration(key="node.kubernetes.io/unschedulable", operator="Exists")]
    )
    assert node_unschedulable_hint(cordon_tolerant, NODE_ADD, None, node(unschedulable=True))


def test_queue_uses_the_hints_by_default() -> None:
    q, clock = make_queue()
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

    q, clock = make_queue(hints={"NodeAffinity": broken})
    q.add(pod())
    (qp,) = q.pop_burst(1)
    q.add_unschedulable(qp, ["NodeAffinity"])
    clock.step(60)
    assert q.on_event(NODE_ADD, None, node()) == 1


POD_ADD = ClusterEvent(EventResource.POD, ActionType.ADD)
POD_LABEL = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL)


def other(
    name: str, labels: dict[str, str], *, node_name: str = "n1", namespace: str = "default"
) -> models.Pod:
    return models.Pod(
        metadata=models.ObjectMeta(
            name=name, namespace=namespace, uid=f"uid-{name}", labels=labels
        ),
        spec=models.PodSpec(node_name=node_name),
    )


def with_affinity(kind: str, labels: dict[str, str], **term: Any) -> models.Pod:
    p = pod()
    affinity_term = models.PodAffinityTerm(
        label_selector=models.LabelSelector(match_labels=labels),
        topology_key="kubernetes.io/hostname",
        **term,
    )
    section = models.PodAffinity(
        required_during_scheduling_ignored_during_execution=[affinity_term]
    )
    p.spec.affinity = models.Affinity(**{kind: section})
    return p


def test_inter_pod_affinity_queues_when_a_wanted_pod_is_placed() -> None:
    wants_db = with_affinity("pod_affinity", {"app": "db"})
    assert inter_pod_affinity_hint(wants_db, POD_ADD, None, other("db", {"app": "db"}))
    assert not inter_pod_affinity_hint(wants_db, POD_ADD, None, other("web", {"app": "web"}))
    # An unplaced pod changes nothing for affinity.
    assert not inter_pod_affinity_hint(
        wants_db, POD_ADD, None, other("db", {"app": "db"}, node_name="")
    )
    # Another namespace is outside the term's (default: own) namespace.
    assert not inter_pod_affinity_hint(
        wants_db, POD_ADD, None, other("db", {"app": "db"}, namespace="prod")
    )
    relabel_old, relabel_new = other("x", {"app": "web"}), other("x", {"app": "db"})
    assert inter_pod_affinity_hint(wants_db, POD_LABEL, relabel_old, relabel_new)


def test_inter_pod_affinity_queues_when_an_avoided_pod_goes() -> None:
    avoids_db = with_affinity("pod_anti_affinity", {"app": "db"})
    assert inter_pod_affinity_hint(avoids_db, ASSIGNED_POD_DELETE, other("db", {"app": "db"}), None)
    assert not inter_pod_affinity_hint(
        avoids_db, ASSIGNED_POD_DELETE, other("web", {"app": "web"}), None
    )


def test_inter_pod_affinity_queues_when_a_pod_whose_anti_affinity_hit_us_goes() -> None:
    placed = with_affinity("pod_anti_affinity", {})
    placed.metadata.name, placed.metadata.uid, placed.spec.node_name = "guard", "uid-guard", "n1"
    assert inter_pod_affinity_hint(pod(), ASSIGNED_POD_DELETE, placed, None)
    assert not inter_pod_affinity_hint(pod(), ASSIGNED_POD_DELETE, other("x", {}), None)


def test_inter_pod_affinity_with_a_namespace_selector_always_queues() -> None:
    p = with_affinity(
        "pod_affinity",
        {"app": "db"},
        namespace_selector=models.LabelSelector(match_labels={"a": "b"}),
    )
    assert inter_pod_affinity_hint(p, POD_ADD, None, other("web", {"app": "web"}))


def spread(*, honor_taints: bool = False) -> models.Pod:
    p = pod()
    p.metadata.labels = {"app": "web"}
    p.spec.topology_spread_constraints = [
        models.TopologySpreadConstraint(
            max_skew=1,
            topology_key="topology.kubernetes.io/zone",
            when_unsatisfiable="DoNotSchedule",
            label_selector=models.LabelSelector(match_labels={"app": "web"}),
            node_taints_policy="Honor" if honor_taints else None,
        )
    ]
    return p


def test_pod_topology_spread_queues_for_selected_pods_in_its_namespace() -> None:
    web = spread()
    assert pod_topology_spread_hint(web, ASSIGNED_POD_DELETE, other("w", {"app": "web"}), None)
    assert not pod_topology_spread_hint(web, ASSIGNED_POD_DELETE, other("d", {"app": "db"}), None)
    assert not pod_topology_spread_hint(
        web, POD_ADD, None, other("w", {"app": "web"}, namespace="prod")
    )
    assert pod_topology_spread_hint(web, POD_LABEL, other("x", {}), other("x", {"app": "web"}))
    assert not pod_topology_spread_hint(web, POD_LABEL, other("x", {}), other("x", {"a": "b"}))


def test_pod_topology_spread_queues_for_nodes_with_its_topology_keys() -> None:
    web = spread()
    zoned = node(labels={"topology.kubernetes.io/zone": "a"})
    assert pod_topology_spread_hint(web, NODE_ADD, None, zoned)
    assert not pod_topology_spread_hint(web, NODE_ADD, None, node())
    relabel = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)
    moved = node(labels={"topology.kubernetes.io/zone": "b"})
    assert pod_topology_spread_hint(web, relabel, zoned, moved)
    other_label = node(labels={"topology.kubernetes.io/zone": "a", "x": "y"})
    assert not pod_topology_spread_hint(web, relabel, zoned, other_label)


def test_pod_topology_spread_without_own_constraints_always_queues() -> None:
    assert pod_topology_spread_hint(pod(), NODE_ADD, None, node())


CLAIM_ADD = ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD)
CLAIM_UPDATE = ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.UPDATE_OTHER)


def resource_claim(name: str, allocated: bool = False) -> ResourceClaim:
    status = {"allocation": {"devices": {"results": []}}} if allocated else {}
    return ResourceClaim(
        metadata=models.ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"),
        spec={"devices": {"requests": []}},
        status=status,
    )


def claiming_pod() -> models.Pod:
    made = pod()
    made.spec.resource_claims = [{"name": "gpu", "resourceClaimName": "mine"}]
    return made


def test_dynamic_resources_queues_for_its_own_claims_changes_only() -> None:
    p = claiming_pod()
    assert dynamic_resources_hint(p, CLAIM_ADD, None, resource_claim("mine"))
    assert not dynamic_resources_hint(p, CLAIM_ADD, None, resource_claim("other"))
    allocated = resource_claim("mine", allocated=True)
    assert dynamic_resources_hint(p, CLAIM_UPDATE, resource_claim("mine"), allocated)
    # metadata only (a finalizer added): the status is as before
    assert not dynamic_resources_hint(p, CLAIM_UPDATE, allocated, resource_claim("mine", True))


def test_dynamic_resources_queues_when_any_claim_is_deallocated() -> None:
    freed = (resource_claim("other", allocated=True), resource_claim("other"))
    assert dynamic_resources_hint(claiming_pod(), CLAIM_UPDATE, *freed)


def test_a_parked_pod_with_claims_wakes_for_its_claim_not_for_others() -> None:
    q, _ = make_queue()
    q.add(claiming_pod())
    (qp,) = q.pop_burst(1)
    q.add_unschedulable(qp, ["DynamicResources"])
    assert q.on_event(CLAIM_UPDATE, resource_claim("x", True), resource_claim("x", True)) == 0
    assert q.where("uid-p") is QueueName.UNSCHEDULABLE
    assert q.on_event(CLAIM_UPDATE, resource_claim("mine"), resource_claim("mine", True)) == 1
