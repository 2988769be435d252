"""How good a run's placements are, read back from the API server beside the feasibility check.

Issue 28 compares a full scan (kubesalvo) with kube-scheduler's sampling
(``percentageOfNodesToScore``, 5% of nodes on large clusters) and with kube-scheduler
scoring every node (``kube-scheduler-all-nodes``); pods/s alone cannot show that sampling
chooses worse nodes. Measured on the final state, over the run's own pods (the cluster's
other pods count toward the nodes' load):

* ``nodes_used``: nodes holding at least one of the run's pods;
* ``cpu_share_sd``: the standard deviation over every node of its requested cpu as a
  percentage of allocatable (LeastAllocated spreads it evenly: low is what the default
  profile aims at);
* ``imbalance``: over the nodes holding run pods, the mean gap between a node's cpu and
  memory shares in percentage points (what NodeResourcesBalancedAllocation scores);
* ``zone_skew`` and ``node_skew``: per owner of run pods (its controller reference), the
  largest count in a zone (a node) less the smallest over every zone (node) of the
  cluster, the worst over owners, as PodTopologySpread measures skew; ``zone_skew`` is
  None when no node carries a zone label.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from kubesalvo.core.resources import CPU, MEMORY, node_allocatable, pod_requests

__all__ = ["ZONE", "measure"]

Object = Mapping[str, Any]
ZONE = "topology.kubernetes.io/zone"
FINISHED = ("Succeeded", "Failed")


def measure(nodes: Iterable[Object], pods: Iterable[Object], run_keys: set[str]) -> dict[str, Any]:
    """The quality figures of the placements of the pods ``run_keys`` names."""
    by_name = {n["metadata"]["name"]: n for n in nodes}
    requested: dict[str, Counter[str]] = defaultdict(Counter)
    per_owner: dict[str, Counter[str]] = defaultdict(Counter)
    run_nodes: set[str] = set()
    for pod in pods:
        meta = pod["metadata"]
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or node_name not in by_name:
            continue
        if (pod.get("status") or {}).get("phase") in FINISHED:
            continue
        requested[node_name].update(pod_requests(pod))
        if f"{meta['namespace']}/{meta['name']}" in run_keys:
            run_nodes.add(node_name)
            per_owner[_owner(meta)][node_name] += 1
    shares = {name: _shares(node, requested[name]) for name, node in by_name.items()}
    cpu = [c for c, _ in shares.values()]
    zones = {name: _labels(node).get(ZONE) for name, node in by_name.items()}
    zone_values = {z for z in zones.values() if z is not None}
    return {
        "nodes_used": len(run_nodes),
        "cpu_share_sd": round(_sd(cpu), 2) if cpu else 0.0,
        "imbalance": round(
            sum(abs(shares[n][0] - shares[n][1]) for n in run_nodes) / len(run_nodes), 2
        )
        if run_nodes
        else 0.0,
        "zone_skew": _worst_skew(per_owner, lambda n: zones[n], zone_values)
        if zone_values
        else None,
        "node_skew": _worst_skew(per_owner, lambda n: n, set(by_name)),
    }


def _owner(meta: Object) -> str:
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            return f"{ref.get('kind')}/{ref.get('uid') or ref.get('name')}"
    return f"{meta['namespace']}/(no controller)"


def _labels(node: Object) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _shares(node: Object, requested: Counter[str]) -> tuple[float, float]:
    allocatable = node_allocatable(node)
    return tuple(  # type: ignore[return-value]
        100.0 * requested[r] / allocatable[r] if allocatable.get(r) else 0.0 for r in (CPU, MEMORY)
    )


def _sd(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def _worst_skew(per_owner: Mapping[str, Counter[str]], domain_of, domains: set[str]) -> int:
    worst = 0
    for counts in per_owner.values():
        in_domain: Counter[str] = Counter()
        for node_name, count in counts.items():
            domain = domain_of(node_name)
            if domain is not None:
                in_domain[domain] += count
        if not in_domain:
            continue
        lowest = 0 if len(in_domain) < len(domains) else min(in_domain.values())
        worst = max(worst, max(in_domain.values()) - lowest)
    return worst
