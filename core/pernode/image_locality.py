"""ImageLocality: prefer nodes that already have the pod's images.

For each container and init container whose image the node reports (a name without a
tag means ``:latest``), add the image size scaled by the share of all nodes that have
it (so an image present everywhere gives no edge). The sum is clamped to
[23Mi, 1000Mi x number of containers] and mapped linearly onto 0..100.
"""

from __future__ import annotations

from kubesalvo.core.pernode.framework import Pod
from kubesalvo.core.pernode.snapshot import NodeInfo, Snapshot

_MB = 1024 * 1024
MIN_THRESHOLD = 23 * _MB
MAX_CONTAINER_THRESHOLD = 1000 * _MB


def normalized_image_name(name: str) -> str:
    """Add ``:latest`` when the last path segment has no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def score(pod: Pod, snapshot: Snapshot, feasible: list[NodeInfo]) -> dict[str, int]:
    spec = pod.get("spec") or {}
    containers = list(spec.get("initContainers") or ()) + list(spec.get("containers") or ())
    images = [normalized_image_name(c.get("image") or "") for c in containers]
    total_nodes = len(snapshot.nodes)
    max_threshold = MAX_CONTAINER_THRESHOLD * len(containers)
    out = {}
    for node in feasible:
        present = snapshot.node_images[node.name]
        total = 0
        for image in images:
            if image in present:
                state = snapshot.images[image]
                spread = float(state.num_nodes) / float(total_nodes)
                total += int(float(state.size) * spread)
        total = min(max(total, MIN_THRESHOLD), max_threshold)
        out[node.name] = 100 * (total - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
    return out
