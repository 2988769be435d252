"""Fake nodes on a local control plane: create them concurrently, wait until kwok has
made every one Ready. Each gets the annotation that tells metrics-server where kwok
serves its kubelet resource metrics, and an address metrics-server can scrape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubesalvo.core.synthetic import make_nodes
from kubesalvo.sched.cluster import processes
from kubesalvo.sched.cluster.api import ApiClient, Matching, is_ready

# kwok's server (see controlplane.kwok_metrics) serves a node's kubelet resource metrics
# here; metrics-server reads the path from this annotation of the node.
METRICS_PATH_ANNOTATION = "metrics.k8s.io/resource-metrics-path"
METRICS_PATH = "/metrics/nodes/{node}/metrics/resource"


def scrapeable(node: Mapping[str, Any]) -> dict[str, Any]:
    """``node`` with the metrics path annotation and, when it has no address, the
    InternalIP kwok serves on (loopback). A node created with its Ready condition
    already set (a bench fleet's, a snapshot's) skips kwok's initialize stage, which is
    what gives a bare node its addresses; without one metrics-server skips the node
    ("no address matched types [InternalIP]") and no pod on it has metrics. What the
    node carries is kept."""
    meta = dict(node.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    annotations.setdefault(METRICS_PATH_ANNOTATION, METRICS_PATH.format(node=meta.get("name")))
    status = dict(node.get("status") or {})
    if not status.get("addresses"):
        status["addresses"] = [
            {"type": "InternalIP", "address": processes.LOOPBACK},
            {"type": "Hostname", "address": str(meta.get("name"))},
        ]
    return {**node, "metadata": {**meta, "annotations": annotations}, "status": status}


NODE_CONCURRENCY = 64


async def add_nodes(
    client: ApiClient, nodes: Sequence[Mapping[str, Any]], timeout: float = 300.0
) -> None:
    """Creates ``nodes`` (existing ones are kept) and waits until all of them are Ready."""
    await client.create_all([scrapeable(node) for node in nodes], exist_ok=True)
    names = [node["metadata"]["name"] for node in nodes]
    await client.wait_for("/api/v1/nodes", Matching(is_ready, names=names), timeout)


async def add_synthetic_nodes(
    client: ApiClient, count: int, seed: int = 0, timeout: float = 300.0
) -> list[dict[str, Any]]:
    """``count`` nodes from the seeded synthetic fleet, created and Ready; returns them."""
    nodes = make_nodes(count, seed)
    await add_nodes(client, nodes, timeout)
    return nodes
