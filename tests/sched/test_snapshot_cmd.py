"""``kubesalvo snapshot`` on the real control plane: the file holds every node, the pods
(bound ones as running load, unbound ones pending) and namespaces the API server lists,
cut down to scheduling fields, and ``kubesalvo simulate --snapshot`` replays it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kubesalvo.sched import snapshot

pytestmark = pytest.mark.integration


def _pod(namespace: str, name: str, node_name: str | None) -> dict:
    spec = {
        "schedulerName": "nobody",  # no scheduler acts on these
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}},
                "env": [{"name": "NOT_FOR_SNAPSHOTS", "value": "x"}],
            }
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": spec,
    }


def test_snapshot_records_the_cluster_and_simulate_replays_it(control_plane, namespace, tmp_path):
    nodes = control_plane.add_nodes(20, seed=0)
    node_name = nodes[0]["metadata"]["name"]
    control_plane.create([_pod(namespace, "running", node_name), _pod(namespace, "waiting", None)])
    out = tmp_path / "cluster.snapshot"
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "snapshot",
         "--kubeconfig", str(control_plane.kubeconfig), "-o", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    taken = snapshot.load(out)

    listed_nodes = control_plane.call(lambda c: c.request("GET", "/api/v1/nodes"))["items"]
    assert {n["metadata"]["name"] for n in taken.nodes} == {
        n["metadata"]["name"] for n in listed_nodes
    }
    mine = {p["metadata"]["name"]: p for p in taken.pods if p["metadata"]["namespace"] == namespace}
    assert set(mine) == {"running", "waiting"}
    assert mine["running"]["spec"]["nodeName"] == node_name
    assert "nodeName" not in mine["waiting"]["spec"]
    container = mine["running"]["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "250m", "memory": "64Mi"}}
    assert "env" not in container  # only what scheduling reads is kept
    assert namespace in {ns["metadata"]["name"] for ns in taken.namespaces}
    assert taken.source == str(control_plane.server)
    assert f"{out}: {len(taken.nodes)} nodes" in done.stdout

    replay = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "simulate", "--snapshot", str(out), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    summary = json.loads(replay.stdout)
    assert summary["nodes"] == len(taken.nodes)
    control_plane.call(
        lambda c: c.request(
            "DELETE", f"/api/v1/namespaces/{namespace}/pods/running", {"gracePeriodSeconds": 0}
        )
    )


def test_snapshot_without_credentials_fails_with_a_message(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "snapshot",
         "--kubeconfig", str(tmp_path / "missing"), "-o", str(tmp_path / "x")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert "cannot load credentials" in done.stderr
    assert not (tmp_path / "x").exists()
