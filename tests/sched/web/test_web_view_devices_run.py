"""The web view's node table of a pod with a resource claim, from a real ``kubesalvo run``
on the local control plane: the view gives the per-node evaluator the pod's
DynamicResources state, as ``explain`` does, so the table shows the node holding the
claimed GPU feasible and chosen and the node without one rejected by the plugin, where
it used to refuse the pod as not modelled."""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest

from tests.helpers import devices as dra
from tests.sched.test_app import CONFIG, SchedulerProcess, delete_nodes, kwok_node

pytestmark = pytest.mark.integration

WAIT = 120.0


def test_a_pod_with_a_claim_gets_a_node_table_with_its_device_verdicts(
    control_plane: Any, namespace: str, tmp_path: Any
) -> None:
    token = secrets.token_hex(3)
    pool = f"webdra-{token}"
    scheduler = f"kubesalvo-{pool}"
    driver = dra.Driver(f"gpu-{token}.example.com", gpus=2)
    nodes = [kwok_node(f"{pool}-gpu", pool), kwok_node(f"{pool}-plain", pool)]
    gpu_node, plain_node = (n["metadata"]["name"] for n in nodes)
    cluster_objects = [driver.device_class("gpu"), driver.slice(gpu_node, "h100")]
    control_plane.create(nodes)
    control_plane.create(cluster_objects)
    config = CONFIG.format(max_burst=100) + f"profiles:\n- schedulerName: {scheduler}\n"
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "webdra")
    try:
        process.wait_ready()
        gpu = dra.request("g", f"gpu.{driver.name}")
        control_plane.create([dra.claim(namespace, "c", dra.claim_spec(gpu))])
        control_plane.create([dra.pod(namespace, "p", scheduler, pool, claims=["c"])])
        path = f"/api/v1/namespaces/{namespace}/pods/p"
        deadline = time.monotonic() + WAIT
        while not control_plane.call(lambda c: c.request("GET", path))["spec"].get("nodeName"):
            assert time.monotonic() < deadline, process.tail()
            time.sleep(0.5)
        table = process.debug(f"/ui/api/pod?pod={namespace}/p")["nodeTable"]
        assert "error" not in table, table
        rows = {row["node"]: row for row in table["rows"]}
        assert rows[gpu_node]["feasible"] and rows[gpu_node]["chosen"]
        assert not rows[plain_node]["feasible"]
        assert rows[plain_node]["unresolvable"]
        assert rows[plain_node]["reasons"]
    finally:
        process.kill()

        async def delete(client: Any) -> None:
            for obj in cluster_objects:
                plural = {"DeviceClass": "deviceclasses", "ResourceSlice": "resourceslices"}
                name = obj["metadata"]["name"]
                await client.request("DELETE", f"{dra.PATH}/{plural[obj['kind']]}/{name}")

        control_plane.call(delete)
        delete_nodes(control_plane, nodes)
