"""ImageLocality for one pod over its feasible nodes: the sums of the scaled sizes of the
images each node holds, scored by the plugin's own functions
(``core/plugins/image_locality.py``, where the rule is written down).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesalvo.core.pernode.framework import Pod
from kubesalvo.core.pernode.snapshot import NodeInfo, Snapshot
from kubesalvo.core.plugins.framework import PerNode
from kubesalvo.core.plugins.image_locality import normalized_image_name, scaled_size, scores

__all__ = ["PER_NODE", "normalized_image_name", "score"]


def score(pod: Pod, snapshot: Snapshot, feasible: list[NodeInfo]) -> dict[str, int]:
    spec = pod.get("spec") or {}
    containers = list(spec.get("initContainers") or ()) + list(spec.get("containers") or ())
    images = [normalized_image_name(c.get("image") or "") for c in containers]
    total_nodes = len(snapshot.nodes)
    sums = []
    for node in feasible:
        present = snapshot.node_images[node.name]
        total = 0
        for image in images:
            if image in present:
                state = snapshot.images[image]
                total += scaled_size(state.size, state.num_nodes, total_nodes)
        sums.append(total)
    found = scores(np.array(sums, dtype=np.int64), len(containers))
    return {node.name: int(s) for node, s in zip(feasible, found, strict=True)}


# Its contribution to the per-node evaluator (``PodEvaluator``), loaded by its spec.
def _score(evaluator: Any, pod: Pod, feasible: list[NodeInfo]) -> dict[str, int]:
    return score(pod, evaluator.snapshot, feasible)


PER_NODE = PerNode(score=_score)
