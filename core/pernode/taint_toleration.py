"""TaintToleration: NoSchedule/NoExecute taints must be tolerated; PreferNoSchedule scores.

Filter: the node fails when one of its NoSchedule or NoExecute taints is tolerated by
none of the pod's tolerations (v1.34 reports "node(s) had untolerated taint(s)").
Score: the number of PreferNoSchedule taints that the pod's PreferNoSchedule (or
effect-less) tolerations do not tolerate, normalised and reversed, so the node with
the fewest such taints scores 100.
"""

from __future__ import annotations

from typing import Any

from kubesalvo.core.pernode.framework import (
    Pod,
    Status,
    default_normalize,
    tolerated,
    untolerated_taint,
)
from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.plugins import taint_toleration
from kubesalvo.core.plugins.framework import PerNode


class TaintToleration:
    node_names: frozenset[str] | None = None

    def __init__(self, pod: Pod) -> None:
        self.pod = pod

    def filter(self, node: NodeInfo) -> Status | None:
        if untolerated_taint(self.pod, node) is not None:
            return Status.unresolvable(taint_toleration.ERR_REASON_UNTOLERATED_TAINT)
        return None


def score(pod: Pod, feasible: list[NodeInfo]) -> dict[str, int]:
    tolerations = [
        t
        for t in (pod.get("spec") or {}).get("tolerations") or ()
        if (t.get("effect") or "") in ("", "PreferNoSchedule")
    ]
    counts = {
        node.name: sum(
            1
            for taint in node.taints
            if taint.get("effect") == "PreferNoSchedule" and not tolerated(tolerations, taint)
        )
        for node in feasible
    }
    return default_normalize(counts, reverse=True)


# Its contribution to the per-node evaluator (``PodEvaluator``), loaded by its spec.
def _filter(evaluator: Any, pod: Pod) -> TaintToleration:
    return TaintToleration(pod)


def _score(evaluator: Any, pod: Pod, feasible: list[NodeInfo]) -> dict[str, int]:
    return score(pod, feasible)


PER_NODE = PerNode(filter=_filter, score=_score)
