"""NodeResourcesFit: requests must fit what is left of allocatable; three resource scores.

Filter, per node, collecting every failure (one node may lack cpu and memory at once):

* "Too many pods" when the node already holds ``allocatable.pods`` pods;
* then, only if the pod requests anything: "Insufficient <resource>" for cpu, memory,
  ephemeral-storage and each requested scalar resource (extended resources absent from
  the node count as 0 allocatable) whose request exceeds allocatable minus requested.
  Extended resources listed in ``ignoredResources`` or whose domain is in
  ``ignoredResourceGroups`` are not checked. The code is Unschedulable, or
  UnschedulableAndUnresolvable when some request exceeds the node's whole allocatable.

Score (``scoringStrategy``), for each configured resource with non-zero allocatable on
the node (a scalar resource the pod does not request is left out):

* LeastAllocated: (allocatable - requested) * 100 / allocatable, 0 when over;
* MostAllocated: requested * 100 / allocatable, capped at 100;
* RequestedToCapacityRatio: the shape (scores 0..10 scaled by 10) at
  requested * 100 / allocatable, resources scoring 0 left out of the weighted mean;

combined as the weight-averaged integer mean (rounded for RequestedToCapacityRatio).
``requested`` is the node's requests plus the pod's, where cpu and memory count 100m /
200Mi for every container that names none (so empty pods still spread). The pod's
side ignores pod-level requests, as v1.34's scorer does (see resources.pod_requests).
"""

from __future__ import annotations

from typing import Any

from kubesalvo.core.pernode.framework import Pod, Status, go_div
from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.plugins import framework, node_resources_fit
from kubesalvo.core.plugins.framework import PerNode
from kubesalvo.core.plugins.node_resources_fit import (
    NodeResourcesFitArgs,
    ScoringStrategyType,
    ShapePoint,
)
from kubesalvo.core.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    is_scalar_resource,
    pod_requests,
)

_MAX_UTILIZATION = 100


def _is_extended(name: str) -> bool:
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


class NodeResourcesFit:
    node_names: frozenset[str] | None = None

    def __init__(self, pod: Pod, args: NodeResourcesFitArgs) -> None:
        self.request = pod_requests(pod)
        self.args = args

    def _ignored(self, name: str) -> bool:
        if not _is_extended(name):
            return False
        return (
            name in self.args.ignored_resources
            or name.split("/")[0] in self.args.ignored_resource_groups
        )

    def filter(self, node: NodeInfo) -> Status | None:
        reasons: list[str] = []
        unresolvable = False
        if len(node.pods) + 1 > node.allocatable.get(PODS, 0):
            reasons.append(node_resources_fit.ERR_REASON_TOO_MANY_PODS)
        if any(self.request.values()):
            for name in (CPU, MEMORY, EPHEMERAL_STORAGE):
                wanted = self.request[name]
                allocatable = node.allocatable.get(name, 0)
                if wanted > 0 and wanted > allocatable - node.requested.get(name, 0):
                    reasons.append(node_resources_fit.insufficient_resource(name))
                    unresolvable |= wanted > allocatable
            # Upstream walks a Go map here, so the order of these reasons is arbitrary;
            # sorting keeps the reference deterministic (the message counts are unaffected).
            for name in sorted(n for n in self.request if is_scalar_resource(n)):
                wanted = self.request[name]
                if wanted == 0 or self._ignored(name):
                    continue
                allocatable = node.allocatable.get(name, 0)
                if wanted > allocatable - node.requested.get(name, 0):
                    reasons.append(node_resources_fit.insufficient_resource(name))
                    unresolvable |= wanted > allocatable
        if not reasons:
            return None
        return Status(
            framework.Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            if unresolvable
            else framework.Code.UNSCHEDULABLE,
            tuple(reasons),
        )


def allocatable_and_requested(
    node: NodeInfo, resource: str, pod_request: int, use_nonzero: bool
) -> tuple[int, int]:
    """(allocatable, requested including the pod) as the resource scorers see a resource.

    (0, 0) leaves the resource out: a scalar resource the pod does not request, or one
    the node does not offer.
    """
    if pod_request == 0 and is_scalar_resource(resource):
        return 0, 0
    if resource == CPU:
        used = node.nonzero_cpu if use_nonzero else node.requested.get(CPU, 0)
        return node.allocatable.get(CPU, 0), used + pod_request
    if resource == MEMORY:
        used = node.nonzero_memory if use_nonzero else node.requested.get(MEMORY, 0)
        return node.allocatable.get(MEMORY, 0), used + pod_request
    if resource == EPHEMERAL_STORAGE:
        return node.allocatable.get(EPHEMERAL_STORAGE, 0), node.requested.get(
            EPHEMERAL_STORAGE, 0
        ) + pod_request
    if resource in node.allocatable and resource != PODS:
        return node.allocatable[resource], node.requested.get(resource, 0) + pod_request
    return 0, 0


def _least(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * 100 // capacity


def _most(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * 100 // capacity


def broken_linear(shape: tuple[ShapePoint, ...], utilization: int) -> int:
    """helper.BuildBrokenLinearFunction over the shape, scores already scaled to 0..100."""
    points = [(p.utilization, p.score * 10) for p in shape]
    for i, (u, s) in enumerate(points):
        if utilization <= u:
            if i == 0:
                return s
            u0, s0 = points[i - 1]
            return s0 + go_div((s - s0) * (utilization - u0), u - u0)
    return points[-1][1]


def score(pod: Pod, feasible: list[NodeInfo], args: NodeResourcesFitArgs) -> dict[str, int]:
    strategy = args.scoring_strategy
    requests = pod_requests(pod, nonzero_defaults=True)
    out = {}
    for node in feasible:
        total = weights = 0
        for spec in strategy.resources:
            capacity, requested = allocatable_and_requested(
                node, spec.name, requests.get(spec.name, 0), use_nonzero=True
            )
            if capacity == 0:
                continue
            if strategy.type is ScoringStrategyType.LEAST_ALLOCATED:
                value = _least(requested, capacity)
            elif strategy.type is ScoringStrategyType.MOST_ALLOCATED:
                value = _most(requested, capacity)
            else:
                utilization = (
                    _MAX_UTILIZATION
                    if requested > capacity
                    else requested * _MAX_UTILIZATION // capacity
                )
                value = broken_linear(strategy.shape, utilization)
                if value <= 0:
                    continue  # RequestedToCapacityRatio leaves zero-scoring resources out
            total += value * spec.weight
            weights += spec.weight
        if weights == 0:
            out[node.name] = 0
        elif strategy.type is ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO:
            # math.Round(total / weights), halves up; exact in integers for these sizes.
            out[node.name] = (2 * total + weights) // (2 * weights)
        else:
            out[node.name] = total // weights
    return out


# Its contribution to the per-node evaluator (``PodEvaluator``), loaded by its spec.
def _filter(evaluator: Any, pod: Pod) -> NodeResourcesFit:
    return NodeResourcesFit(pod, evaluator.profile.fit)


def _score(evaluator: Any, pod: Pod, feasible: list[NodeInfo]) -> dict[str, int]:
    return score(pod, feasible, evaluator.profile.fit)


PER_NODE = PerNode(filter=_filter, score=_score)
