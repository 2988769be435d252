"""NodePool and NodeLabelPreference, the example plugins of docs/plugins.md (a static filter and a
static score), in ``kubesalvo run`` on the real control plane.

The test's own three tainted nodes: "gpu" in pool gpu, "plain-0" and "plain-1" in no
pool. With NodePool enabled in the config, the gpu pod goes to the gpu node although the
plain nodes are emptier, the plain pods stay off it, and a pod of a pool no node has is
reported Unschedulable with the plugin's reason; labelling a node into that pool (a node
label update, an event NodePool registered) brings the pod back and binds it there. With
NodeLabelPreference preferring an ssd label that only plain-1 carries, the plain pods all
go to plain-1, though the resource scores alone would spread them.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesalvo.sched.cluster.api import ApiError
from tests.sched.test_app import (
    CONFIG,
    SchedulerProcess,
    delete_nodes,
    delete_pods,
    kwok_node,
    list_objects,
    pod_scheduled,
    settled,
)

pytestmark = pytest.mark.integration

POOL = "kubesalvo.io/pool"
TAINT_KEY = "kubesalvo.io/test"
NODE_POOL = """\
profiles:
- schedulerName: kubesalvo
  plugins:
    filter:
      enabled: [{name: NodePool}]
  pluginConfig:
  - {name: NodePool, args: {label: kubesalvo.io/pool}}
"""


class Nodes:
    """The test's nodes, tainted and labelled so that only its own pods see them."""

    def __init__(self, control_plane: Any, namespace: str) -> None:
        self.control_plane = control_plane
        self.namespace = namespace
        self.name = f"pool-{secrets.token_hex(3)}"
        self.nodes = [
            self._node("gpu", "4", pool="gpu"),
            self._node("plain-0", "16"),
            self._node("plain-1", "16"),
        ]
        self.pods: list[dict[str, Any]] = []
        control_plane.create(self.nodes)

    def node_name(self, short: str) -> str:
        return f"{self.name}-{short}"

    def _node(self, short: str, cpu: str, pool: str = "") -> dict[str, Any]:
        node = kwok_node(self.node_name(short), self.name, cpu=cpu)
        if pool:
            node["metadata"]["labels"][POOL] = pool
        node["spec"] = {"taints": [{"key": TAINT_KEY, "value": self.name, "effect": "NoSchedule"}]}
        return node

    def pod(self, name: str, pool: str = "") -> dict[str, Any]:
        made = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {POOL: pool} if pool else {},
            },
            "spec": {
                "schedulerName": "kubesalvo",
                "nodeSelector": {"kubesalvo.io/test-pool": self.name},
                "tolerations": [
                    {
                        "key": TAINT_KEY,
                        "operator": "Equal",
                        "value": self.name,
                        "effect": "NoSchedule",
                    }
                ],
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "1", "memory": "100Mi"}},
                    }
                ],
            },
        }
        self.pods.append(made)
        return made

    def listed(self) -> dict[str, dict[str, Any]]:
        pods = list_objects(self.control_plane, f"/api/v1/namespaces/{self.namespace}/pods")
        return {p["metadata"]["name"]: p for p in pods}

    def label(self, short: str, pool: str, key: str = POOL) -> None:
        """Put the node into ``pool`` (read, relabel, replace: an update of its labels)."""
        path = f"/api/v1/nodes/{self.node_name(short)}"

        async def relabel(client: Any) -> None:
            # kwok writes the node's status meanwhile: a replace of a stale read is refused
            # (409), so read again and retry.
            for _ in range(20):
                node = await client.request("GET", path)
                node["metadata"]["labels"][key] = pool
                try:
                    await client.request("PUT", path, node)
                    return
                except ApiError as error:
                    if error.status != 409:
                        raise
            raise AssertionError(f"{path}: still conflicting after 20 replaces")

        self.control_plane.call(relabel)

    def delete(self) -> None:
        delete_pods(self.control_plane, self.pods)
        delete_nodes(self.control_plane, self.nodes)


@pytest.fixture
def nodes(control_plane, namespace) -> Iterator[Nodes]:
    made = Nodes(control_plane, namespace)
    try:
        yield made
    finally:
        made.delete()


def test_node_pool_keeps_pools_apart_and_a_new_pool_node_brings_a_pod_back(
    control_plane, nodes, tmp_path: Path
):
    config = CONFIG.format(max_burst=1000) + NODE_POOL
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "node-pool")
    try:
        process.wait_ready()
        pods = [
            nodes.pod("trainer", pool="gpu"),
            nodes.pod("web-0"),
            nodes.pod("web-1"),
            nodes.pod("web-2"),
            nodes.pod("lost", pool="fpga"),
        ]
        control_plane.create(pods)

        def decided() -> bool:
            listed = nodes.listed()
            return all(
                p["spec"].get("nodeName")
                or (pod_scheduled(p) or {}).get("reason") == "Unschedulable"
                for p in listed.values()
            ) and len(listed) == len(pods)

        settled(process, 120, decided)
        listed = nodes.listed()
        assert listed["trainer"]["spec"]["nodeName"] == nodes.node_name("gpu")
        plain = {nodes.node_name("plain-0"), nodes.node_name("plain-1")}
        for name in ("web-0", "web-1", "web-2"):
            assert listed[name]["spec"]["nodeName"] in plain
        lost = listed["lost"]
        assert not lost["spec"].get("nodeName")
        message = (pod_scheduled(lost) or {}).get("message", "")
        assert "3 node(s) didn't match the pod's node pool" in message, message

        nodes.label("plain-1", "fpga")
        settled(process, 120, lambda: bool(nodes.listed()["lost"]["spec"].get("nodeName")))
        assert nodes.listed()["lost"]["spec"]["nodeName"] == nodes.node_name("plain-1")
    finally:
        process.kill()


SSD = "example.com/ssd"
PREFER_SSD = """\
profiles:
- schedulerName: kubesalvo
  plugins:
    filter:
      enabled: [{name: NodePool}]
    score:
      enabled: [{name: NodeLabelPreference, weight: 100}]
  pluginConfig:
  - {name: NodePool, args: {label: kubesalvo.io/pool}}
  - {name: NodeLabelPreference, args: {present: [example.com/ssd]}}
"""


def test_node_label_preference_puts_pods_on_the_preferred_node(
    control_plane, nodes, tmp_path: Path
):
    nodes.label("plain-1", "true", key=SSD)
    config = CONFIG.format(max_burst=1000) + PREFER_SSD
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "prefer-ssd")
    try:
        process.wait_ready()
        pods = [nodes.pod(f"web-{i}") for i in range(4)]
        control_plane.create(pods)
        settled(
            process,
            120,
            lambda: all(p["spec"].get("nodeName") for p in nodes.listed().values()),
        )
        placed = {p["spec"]["nodeName"] for p in nodes.listed().values()}
        assert placed == {nodes.node_name("plain-1")}
    finally:
        process.kill()
