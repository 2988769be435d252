"""BurstPacking in ``kubesalvo run`` on the real control plane: one process, two profiles,
each with its own schedulerName and its own six tainted kwok nodes (4 cpu each). The same
burst of twelve 1-cpu pods, two of them asking for nodes labelled ssd (two nodes of each
set carry it), created before the scheduler starts so that each profile places it as one
burst: the default profile spreads it over all six nodes, the profile enabling
BurstPacking binds it onto three, and every pod is on a node that passes its filters
(its pool's nodeSelector, the ssd selector, the taint it tolerates, the cpu fit);
``/debug/explain`` names the pods BurstPacking moved.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest

from tests.sched.test_app import (
    CONFIG,
    SchedulerProcess,
    delete_nodes,
    delete_pods,
    kwok_node,
    list_objects,
    settled,
)

pytestmark = pytest.mark.integration

TAINT_KEY = "kubesalvo.io/test"
SSD = "example.com/ssd"
PROFILES = """\
profiles:
- schedulerName: {spread}
- schedulerName: {packed}
  plugins:
    reserve:
      enabled: [{{name: BurstPacking}}]
  pluginConfig:
  - name: BurstPacking
    args: {{maxExactPods: 100, timeBudgetSeconds: 5}}
"""


def _nodes(pool: str) -> list[dict[str, Any]]:
    nodes = []
    for i in range(6):
        node = kwok_node(f"{pool}-{i}", pool, cpu="4")
        if i in (1, 4):
            node["metadata"]["labels"][SSD] = "true"
        node["spec"] = {"taints": [{"key": TAINT_KEY, "value": pool, "effect": "NoSchedule"}]}
        nodes.append(node)
    return nodes


def _pods(namespace: str, pool: str, scheduler: str) -> list[dict[str, Any]]:
    pods = []
    for i in range(12):
        selector = {"kubesalvo.io/test-pool": pool}
        if i < 2:
            selector[SSD] = "true"
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{scheduler}-{i}", "namespace": namespace},
                "spec": {
                    "schedulerName": scheduler,
                    "nodeSelector": selector,
                    "tolerations": [
                        {
                            "key": TAINT_KEY,
                            "operator": "Equal",
                            "value": pool,
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
        )
    return pods


def _check_filters(pods: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> set[str]:
    """Every pod bound on a node its filters pass; the nodes used."""
    by_name = {n["metadata"]["name"]: n for n in nodes}
    cpu: dict[str, int] = {}
    for pod in pods:
        name = pod["spec"].get("nodeName")
        assert name in by_name, (pod["metadata"]["name"], name)
        node = by_name[name]
        labels = node["metadata"]["labels"]
        for key, value in pod["spec"]["nodeSelector"].items():
            assert labels.get(key) == value, (pod["metadata"]["name"], name, key)
        (taint,) = node["spec"]["taints"]
        assert any(t["value"] == taint["value"] for t in pod["spec"]["tolerations"])
        cpu[name] = cpu.get(name, 0) + 1
    assert all(used <= 4 for used in cpu.values()), cpu
    return set(cpu)


def test_a_profile_with_burst_packing_binds_a_burst_onto_fewer_nodes(
    control_plane, namespace, tmp_path: Path
):
    token = secrets.token_hex(3)
    spread, packed = f"spread-{token}", f"packed-{token}"
    nodes = {spread: _nodes(f"sp-{token}"), packed: _nodes(f"pk-{token}")}
    pods = {
        name: _pods(namespace, f"{'sp' if name == spread else 'pk'}-{token}", name)
        for name in (spread, packed)
    }
    made_nodes = nodes[spread] + nodes[packed]
    made_pods = pods[spread] + pods[packed]
    control_plane.create(made_nodes)
    process = None
    try:
        # The pods exist before the scheduler starts: each profile gets them as one burst.
        control_plane.create(made_pods)
        config = CONFIG.format(max_burst=1000) + PROFILES.format(spread=spread, packed=packed)
        process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "burst-packing")
        process.wait_ready()

        def listed() -> dict[str, list[dict[str, Any]]]:
            found = list_objects(control_plane, f"/api/v1/namespaces/{namespace}/pods")
            return {
                name: [p for p in found if p["spec"]["schedulerName"] == name]
                for name in (spread, packed)
            }

        settled(
            process,
            180,
            lambda: all(p["spec"].get("nodeName") for ps in listed().values() for p in ps),
        )
        bound = listed()
        assert len(bound[spread]) == len(bound[packed]) == 12
        spread_nodes = _check_filters(bound[spread], nodes[spread])
        packed_nodes = _check_filters(bound[packed], nodes[packed])
        assert len(spread_nodes) == 6
        assert len(packed_nodes) == 3
        # explain names the pods BurstPacking moved, with the node the kernel chose.
        moved = []
        for pod in bound[packed]:
            answer = process.debug(f"/debug/explain?pod={namespace}/{pod['metadata']['name']}")
            packing = answer.get("lastAttempt", {}).get("burstPacking")
            if packing is not None:
                moved.append(pod)
                assert packing["kernelNode"] in {n["metadata"]["name"] for n in nodes[packed]}
                assert packing["kernelNode"] != pod["spec"]["nodeName"]
        assert moved
    finally:
        if process is not None:
            process.kill()
        delete_pods(control_plane, made_pods)
        delete_nodes(control_plane, made_nodes)
