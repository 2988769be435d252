"""NodeUnschedulable: a cordoned node (spec.unschedulable) takes only pods that tolerate it.

The pod must tolerate the taint ``node.kubernetes.io/unschedulable:NoSchedule``, which
the node lifecycle controller adds to cordoned nodes; kube-scheduler checks the field
itself so that the rule holds before the taint appears.
"""

from __future__ import annotations

from typing import Any

from kubesalvo.core.pernode.framework import Pod, Status, tolerated
from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.plugins import node_unschedulable
from kubesalvo.core.plugins.framework import PerNode

UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class NodeUnschedulable:
    node_names: frozenset[str] | None = None

    def __init__(self, pod: Pod) -> None:
        self.tolerates_cordon = tolerated(
            list((pod.get("spec") or {}).get("tolerations") or ()), UNSCHEDULABLE_TAINT
        )

    def filter(self, node: NodeInfo) -> Status | None:
        if node.unschedulable and not self.tolerates_cordon:
            return Status.unresolvable(node_unschedulable.ERR_REASON_UNSCHEDULABLE)
        return None


# Its contribution to the per-node evaluator (``PodEvaluator``), loaded by its spec.
def _filter(evaluator: Any, pod: Pod) -> NodeUnschedulable:
    return NodeUnschedulable(pod)


PER_NODE = PerNode(filter=_filter)
