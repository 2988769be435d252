"""An independent check of where a run's pods ended up, read back from the API server.

It does not trust any scheduler: it lists every node and every active pod and checks that

* each bound pod's node exists;
* no node is overcommitted: for every resource the pods on it request (kube-scheduler's
  request arithmetic, ``core.resources``), the sum stays within allocatable, and the pod
  count within allocatable pods;
* each pod of the run tolerates its node's NoSchedule/NoExecute taints, the node is not
  cordoned (unless the pod tolerates the unschedulable taint), and its ``nodeSelector``
  matches the node's labels.

Constraints that depend on the order of placement (spread, inter-pod affinity) are not
re-judged on the final state, where they can read differently than when each pod was placed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core.resources import PODS, node_allocatable, pod_requests
from kubesalvo.sched.bench import quality

Object = Mapping[str, Any]
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
FINISHED = ("Succeeded", "Failed")
SHOWN = 20


@dataclass
class Feasibility:
    # The run's pods as the API server has them at the check, bound or not: the
    # server's own count, beside what the measuring watch saw.
    run_pods_found: int = 0
    run_pods_unbound: int = 0
    pods_checked: int = 0
    nodes_used: int = 0
    violations: list[str] = field(default_factory=list)
    violation_count: int = 0
    # Claims of the run's bound pods whose binding was read back (a scenario with
    # storage, sched/bench/volumes.py); their problems are among the violations.
    claims_checked: int = 0
    # How good the placements are (sched/bench/quality.py): nodes used, balance, skew.
    quality: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.violation_count == 0

    def add(self, message: str) -> None:
        self.violation_count += 1
        if len(self.violations) < SHOWN:
            self.violations.append(message)


def _tolerates(toleration: Object, taint: Object) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    if (toleration.get("operator") or "Equal") == "Exists":
        return True
    return (toleration.get("value") or "") == (taint.get("value") or "")


def _static_problem(pod: Object, node: Object) -> str | None:
    spec = pod.get("spec") or {}
    tolerations = spec.get("tolerations") or []
    node_spec = node.get("spec") or {}
    taints = list(node_spec.get("taints") or [])
    if node_spec.get("unschedulable"):
        taints.append(UNSCHEDULABLE_TAINT)
    for taint in taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(
            _tolerates(t, taint) for t in tolerations
        ):
            return f"untolerated taint {taint.get('key')}={taint.get('value', '')}"
    labels = (node.get("metadata") or {}).get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return f"nodeSelector {key}={value} does not match"
    return None


def check(nodes: Iterable[Object], pods: Iterable[Object], run_keys: set[str]) -> Feasibility:
    """Checks every active bound pod's node for overcommit, and the run's pods (keys
    ``namespace/name``) for static fit."""
    result = Feasibility()
    by_name = {n["metadata"]["name"]: n for n in nodes}
    pods = list(pods)
    requested: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pod in pods:
        meta = pod["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        node_name = (pod.get("spec") or {}).get("nodeName")
        if key in run_keys:
            result.run_pods_found += 1
            result.run_pods_unbound += not node_name
        if not node_name or (pod.get("status") or {}).get("phase") in FINISHED:
            continue
        node = by_name.get(node_name)
        if node is None:
            result.add(f"{key}: bound to {node_name}, which does not exist")
            continue
        totals = requested[node_name]
        for resource, amount in pod_requests(pod).items():
            totals[resource] += amount
        totals[PODS] += 1
        if key in run_keys:
            result.pods_checked += 1
            problem = _static_problem(pod, node)
            if problem:
                result.add(f"{key} on {node_name}: {problem}")
    result.nodes_used = len(requested)
    for node_name, totals in requested.items():
        allocatable = node_allocatable(by_name[node_name])
        for resource, amount in sorted(totals.items()):
            if amount > allocatable.get(resource, 0):
                result.add(
                    f"{node_name} overcommitted: {resource} requested {amount} > "
                    f"allocatable {allocatable.get(resource, 0)}"
                )
    result.quality = quality.measure(by_name.values(), pods, run_keys)
    return result
