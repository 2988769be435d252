"""Objects the queueing hints' tests give them: the informers' typed models, as the queue
does (the hints take API dicts alike)."""

from __future__ import annotations

from typing import Any

from kubesalvo.core.plugins.framework import ActionType, ClusterEvent, EventResource
from kubesalvo.sched.informers import models
from kubesalvo.sched.informers.resources import ResourceClaim

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
