"""Fake nodes on a local control plane: create them concurrently, wait until kwok has
made every one Ready."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubesalvo.core.synthetic import make_nodes
from kubesalvo.sched.cluster.api import ApiClient, Matching, is_ready

NODE_CONCURRENCY = 64


async def add_nodes(
    client: ApiClient, nodes: Sequence[Mapping[str, Any]], timeout: float = 300.0
) -> None:
    """Creates ``nodes`` (existing ones are kept) and waits until all of them are Ready."""
    await client.create_all(nodes, exist_ok=True)
    names = [node["metadata"]["name"] for node in nodes]
    await client.wait_for("/api/v1/nodes", Matching(is_ready, names=names), timeout)


async def add_synthetic_nodes(
    client: ApiClient, count: int, seed: int = 0, timeout: float = 300.0
) -> list[dict[str, Any]]:
    """``count`` nodes from the seeded synthetic fleet, created and Ready; returns them."""
    nodes = make_nodes(count, seed)
    await add_nodes(client, nodes, timeout)
    return nodes
