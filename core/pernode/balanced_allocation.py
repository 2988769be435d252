"""NodeResourcesBalancedAllocation: prefer nodes whose resources fill up evenly.

For each configured resource the node offers (a scalar resource only when the pod asks
for it), the fraction requested (node's requests plus the pod's, capped at 1); the
score is (1 - standard deviation of the fractions) * 100, truncated. With two
resources the deviation is half their difference. Requests are the real ones (no
100m/200Mi defaults). A pod that requests none of the resources (best effort) is not
scored by this plugin at all.

The arithmetic is IEEE double as upstream's, so results match to the unit.
"""

from __future__ import annotations

import math
from typing import Any

from kubesalvo.core.pernode.framework import Pod
from kubesalvo.core.pernode.node_resources_fit import allocatable_and_requested
from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.plugins.balanced_allocation import NodeResourcesBalancedAllocationArgs
from kubesalvo.core.plugins.framework import PerNode
from kubesalvo.core.resources import pod_requests


def score(
    pod: Pod, feasible: list[NodeInfo], args: NodeResourcesBalancedAllocationArgs
) -> dict[str, int] | None:
    requests = pod_requests(pod, use_status=True)
    wanted = [requests.get(spec.name, 0) for spec in args.resources]
    if not any(wanted):
        return None
    out = {}
    for node in feasible:
        fractions: list[float] = []
        total = 0.0
        for spec, request in zip(args.resources, wanted, strict=True):
            capacity, requested = allocatable_and_requested(
                node, spec.name, request, use_nonzero=False
            )
            if capacity == 0:
                continue
            # Convert before dividing, as Go does (exact for counts below 2^53).
            fraction = min(float(requested) / float(capacity), 1.0)
            total += fraction
            fractions.append(fraction)
        std = 0.0
        if len(fractions) == 2:
            std = abs((fractions[0] - fractions[1]) / 2)
        elif len(fractions) > 2:
            # Plain left-to-right sums (not math.fsum / sum()) to round as Go does.
            mean = total / len(fractions)
            squares = 0.0
            for fraction in fractions:
                squares = squares + (fraction - mean) * (fraction - mean)
            std = math.sqrt(squares / len(fractions))
        out[node.name] = int((1 - std) * 100.0)
    return out


# Its contribution to the per-node evaluator (``PodEvaluator``), loaded by its spec.
def _score(evaluator: Any, pod: Pod, feasible: list[NodeInfo]) -> dict[str, int] | None:
    return score(pod, feasible, evaluator.profile.balanced_allocation)


PER_NODE = PerNode(score=_score)
