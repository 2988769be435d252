"""NodeName: a pod that names a node (spec.nodeName) fits only that node."""

from __future__ import annotations

from typing import Any

from kubesalvo.core.pernode.framework import Pod, Status
from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.plugins import node_name
from kubesalvo.core.plugins.framework import PerNode


class NodeName:
    node_names: frozenset[str] | None = None

    def __init__(self, pod: Pod) -> None:
        self.wanted = (pod.get("spec") or {}).get("nodeName") or ""

    def filter(self, node: NodeInfo) -> Status | None:
        if self.wanted and self.wanted != node.name:
            return Status.unresolvable(node_name.ERR_REASON_NODE_NAME)
        return None


# Its contribution to the per-node evaluator (``PodEvaluator``), loaded by its spec.
def _filter(evaluator: Any, pod: Pod) -> NodeName:
    return NodeName(pod)


PER_NODE = PerNode(filter=_filter)
