"""The node cache on the real API server: names-only requests answered from what the watch
shows, including pods the extender was never asked about (kube-scheduler sends only the
pods its ``managedResources`` select, or other schedulers bind them)."""

from __future__ import annotations

import secrets

import pytest

from kubesalvo.sched.extender.service import Extender
from tests.helpers.extender import config, post

pytestmark = pytest.mark.integration

RULES = [
    {
        "name": "team-cap",
        "podSelector": {"matchLabels": {"team": "cap"}},
        "maxPodsPerNode": 2,
    }
]


def kwok_node(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
    }


def bound_pod(namespace: str, name: str, node: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"team": "cap"}},
        "spec": {
            "nodeName": node,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


async def test_names_only_answers_follow_the_watch_not_the_requests(
    api, control_plane, namespace, eventually
):
    prefix = f"nc{secrets.token_hex(3)}"
    names = [f"{prefix}-{i}" for i in range(2)]
    control_plane.create([kwok_node(name) for name in names])
    cfg = config([{"name": "policy", "args": {"rules": RULES}}])
    extender = Extender(cfg, api, "127.0.0.1", 0)
    await extender.start()
    try:
        await extender.synced(timeout=60)
        await eventually(lambda: all(n in extender.feed.state.row_of for n in names), 30, "nodes")
        # Two pods of the team bound to the first node by someone else (never sent here).
        control_plane.create([bound_pod(namespace, f"p{i}", names[0]) for i in range(2)])
        state = extender.feed.state
        row = state.row_of[names[0]]
        await eventually(lambda: len(state.pods_on_row[row]) == 2, 30, "pods in the cache")
        incoming = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "new", "namespace": namespace, "labels": {"team": "cap"}},
            "spec": {"containers": [{"name": "c", "image": "pause"}]},
        }
        status, body = await post(
            extender.url, "filter", {"Pod": incoming, "NodeNames": [*names, f"{prefix}-none"]}
        )
        assert status == 200
        assert body["NodeNames"] == [names[1]]
        assert "2 or more pods of team 'cap'" in body["FailedNodes"][names[0]]
        assert f"{prefix}-none" in body["FailedAndUnresolvableNodes"]
        # A node deleted from the cluster leaves the cache: it becomes unknown.
        await api.request("DELETE", f"/api/v1/nodes/{names[1]}")
        await eventually(lambda: names[1] not in state.row_of, 30, "node removal")
        _, body = await post(extender.url, "filter", {"Pod": incoming, "NodeNames": names})
        assert body["NodeNames"] == []
        assert names[1] in body["FailedAndUnresolvableNodes"]
    finally:
        await extender.shutdown()
