"""``kubesalvo snapshot`` on the real control plane: the file holds every node, the pods
(bound ones as running load, unbound ones pending) and namespaces the API server lists,
and the Services and controllers default spreading selects with, cut down to scheduling
fields; ``kubesalvo simulate --snapshot`` replays it. Credentials that may not list a
workload kind give a warning and a snapshot without that kind."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesalvo.sched.client import ApiClient, ApiError, load_credentials
from kubesalvo.sched.informers.workloads import SERVICES
from kubesalvo.sched.snapshot import files as snapshot
from kubesalvo.sched.snapshot import record as snapshot_cmd
from tests.helpers import devices as dra
from tests.sched import test_run_default_spread
from tests.sched.test_app import delete_nodes, delete_pods, kwok_node
from tests.sched.test_run_default_spread import REPLICAS, _spread

pytestmark = pytest.mark.integration

pool = test_run_default_spread.pool


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


def test_snapshot_finds_credentials_in_the_kubeconfig_variable_first_file_winning(
    control_plane, tmp_path
):
    """No --kubeconfig: $KUBECONFIG's files, merged as kubectl merges them, as on a laptop."""
    real = yaml.safe_load(control_plane.kubeconfig.read_text())
    # The second file is the control plane's with a token the server rejects; the first
    # file names the same user with the real token, so only a first-wins merge succeeds.
    (user,) = real["users"]
    stale = {**real, "users": [{"name": user["name"], "user": {"token": "not-a-token"}}]}
    (tmp_path / "stale").write_text(yaml.safe_dump(stale))
    (tmp_path / "first").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "users": [user]})
    )
    listed = [tmp_path / "missing", tmp_path / "first", tmp_path / "stale"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env.update(KUBECONFIG=os.pathsep.join(map(str, listed)), HOME=str(tmp_path))
    out = tmp_path / "cluster.snapshot"
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "snapshot", "-o", str(out)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert snapshot.load(out).source == str(control_plane.server)


# --- workloads -----------------------------------------------------------------------------


def _deployment(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "schedulerName": "nobody",  # the replicas stay pending
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                },
            },
        },
    }


def _service(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}]},
    }


def _items(control_plane: Any, path: str) -> list[dict[str, Any]]:
    return control_plane.call(lambda c: c.request("GET", path))["items"]


def _replicaset_of(control_plane: Any, namespace: str, replicas: int) -> dict[str, Any]:
    """The Deployment's ReplicaSet, once the controller manager made it and its pods."""
    deadline = time.monotonic() + 60
    while True:
        sets = _items(control_plane, f"/apis/apps/v1/namespaces/{namespace}/replicasets")
        pods = _items(control_plane, f"/api/v1/namespaces/{namespace}/pods")
        if len(sets) == 1 and len(pods) == replicas:
            return sets[0]
        assert time.monotonic() < deadline, "the controller manager made no ReplicaSet pods"
        time.sleep(0.2)


def _record(kubeconfig: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "snapshot",
         "--kubeconfig", str(kubeconfig), "-o", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _mine(objects: list[dict[str, Any]], namespace: str) -> dict[tuple[str, str], dict]:
    return {
        (o["kind"], o["metadata"]["name"]): o
        for o in objects
        if o["metadata"]["namespace"] == namespace
    }


def test_a_deployments_replicaset_and_a_service_are_recorded(control_plane, namespace, tmp_path):
    control_plane.create([_deployment(namespace, "web"), _service(namespace, "web")])
    replicaset = _replicaset_of(control_plane, namespace, replicas=2)
    service = _items(control_plane, f"/api/v1/namespaces/{namespace}/services")[0]
    out = tmp_path / "cluster.snapshot"
    done = _record(control_plane.kubeconfig, out)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    taken = snapshot.load(out)
    assert taken.omitted == []
    name = replicaset["metadata"]["name"]
    assert _mine(taken.workloads, namespace) == {
        ("ReplicaSet", name): {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": namespace,
                         "uid": replicaset["metadata"]["uid"]},
            # As listed: the Deployment adds its pod-template-hash label to the selector.
            "spec": {"selector": replicaset["spec"]["selector"]},
        },
        ("Service", "web"): {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": namespace,
                         "uid": service["metadata"]["uid"]},
            "spec": {"selector": {"app": "web"}},
        },
    }  # fmt: skip
    # The pending replicas name their ReplicaSet as controller: default spreading finds it.
    replicas = [p for p in taken.pending_pods() if p["metadata"]["namespace"] == namespace]
    assert len(replicas) == 2
    for pod in replicas:
        assert pod["metadata"]["ownerReferences"] == [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name,
             "uid": replicaset["metadata"]["uid"], "controller": True}
        ]  # fmt: skip
    assert f"{len(taken.workloads)} workloads" in done.stdout
    # The API server's own Service (default/kubernetes) has no selector: none is recorded.
    kubernetes = _mine(taken.workloads, "default")[("Service", "kubernetes")]
    assert kubernetes["spec"] == {}


# What ``kubesalvo snapshot`` lists, less ReplicaSets.
RULES = [
    {"apiGroups": [""], "resources": ["nodes", "pods", "namespaces", "services",
                                      "replicationcontrollers"], "verbs": ["list"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["list"]},
    {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["persistentvolumeclaims", "persistentvolumes"],
     "verbs": ["list"]},
    {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses", "csinodes", "csidrivers",
                                                    "csistoragecapacities"], "verbs": ["list"]},
    {"apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses", "resourceclaims",
                                                     "resourceslices", "resourceclaimtemplates"],
     "verbs": ["list"]},
]  # fmt: skip


def _restricted_kubeconfig(control_plane: Any, namespace: str, folder: Path, name: str) -> Path:
    """A kubeconfig for a service account bound to ``RULES``, once the API server
    authorises it."""
    rbac = "rbac.authorization.k8s.io"
    control_plane.create(
        [
            {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": name, "namespace": namespace}},
            {"apiVersion": f"{rbac}/v1", "kind": "ClusterRole", "metadata": {"name": name},
             "rules": RULES},
            {"apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": name},
             "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": name},
             "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]},
        ]
    )  # fmt: skip
    answer = control_plane.call(
        lambda c: c.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        )
    )
    config = yaml.safe_load(Path(control_plane.kubeconfig).read_text())
    for user in config["users"]:
        user["user"] = {"token": answer["status"]["token"]}
    path = folder / "restricted.kubeconfig"
    path.write_text(yaml.safe_dump(config))

    async def authorised() -> None:
        # The RBAC authorizer learns of the new binding through its own watch.
        async with ApiClient(load_credentials(str(path)), qps=0) as client:
            deadline = time.monotonic() + 30
            while True:
                try:
                    await client.request("GET", "/api/v1/nodes", params={"limit": "1"})
                    return
                except ApiError as error:
                    if error.status != 403 or time.monotonic() > deadline:
                        raise
                await asyncio.sleep(0.2)

    asyncio.run(authorised())
    return path


def test_a_forbidden_workload_kind_is_warned_about_and_left_out(control_plane, namespace, tmp_path):
    control_plane.create([_deployment(namespace, "api"), _service(namespace, "api")])
    _replicaset_of(control_plane, namespace, replicas=2)
    role = f"snapshot-no-replicasets-{secrets.token_hex(3)}"
    kubeconfig = _restricted_kubeconfig(control_plane, namespace, tmp_path, role)
    try:
        out = tmp_path / "partial.snapshot"
        done = _record(kubeconfig, out)
        assert done.returncode == 0, done.stderr
        assert "warning: cannot list replicasets (403 Forbidden" in done.stderr
        assert "recorded without them" in done.stderr
        assert "(without replicasets: forbidden or not served)" in done.stdout
        taken = snapshot.load(out)
        assert taken.omitted == ["replicasets"]
        assert set(_mine(taken.workloads, namespace)) == {("Service", "api")}
        assert not any(w["kind"] == "ReplicaSet" for w in taken.workloads)
        assert len([p for p in taken.pods if p["metadata"]["namespace"] == namespace]) == 2

        replay = subprocess.run(
            [sys.executable, "-m", "kubesalvo.sched.cli", "simulate", "--snapshot", str(out),
             "--json"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert replay.returncode == 0, replay.stderr
        assert "warning: the snapshot lacks replicasets" in replay.stderr
        assert json.loads(replay.stdout)["omitted_workloads"] == ["replicasets"]
    finally:
        rbac = "/apis/rbac.authorization.k8s.io/v1"

        async def cleanup(client: Any) -> None:
            await client.request("DELETE", f"{rbac}/clusterrolebindings/{role}")
            await client.request("DELETE", f"{rbac}/clusterroles/{role}")

        control_plane.call(cleanup)


def test_workloads_are_listed_page_by_page(control_plane, credentials, namespace, monkeypatch):
    control_plane.create([_service(namespace, f"svc-{i}") for i in range(3)])
    monkeypatch.setattr(snapshot_cmd, "PAGE_SIZE", 1)

    async def services() -> list[dict[str, Any]]:
        async with ApiClient(credentials, qps=0) as client:
            return await snapshot_cmd.list_workloads(client, SERVICES, "Service")

    listed = asyncio.run(services())
    everywhere = _items(control_plane, "/api/v1/services")
    assert len(listed) == len(everywhere) > 3
    assert sorted(s["metadata"]["name"] for s in _mine(listed, namespace).values()) == [
        "svc-0", "svc-1", "svc-2",
    ]  # fmt: skip
    assert all(s["kind"] == "Service" for s in listed)


def test_a_recorded_deployment_is_replayed_with_default_spreading(control_plane, pool, tmp_path):
    # test_run_default_spread's pool: "a" empty, "b" and "c" nearly full, so the replicas
    # all go to "a" unless their ReplicaSet gives them the System default constraints.
    pool.deploy("web")
    deadline = time.monotonic() + 60
    while len(pool.replicas("web")) < REPLICAS:
        assert time.monotonic() < deadline, "the controller manager made no replicas"
        time.sleep(0.2)
    out, after = tmp_path / "cluster.snapshot", tmp_path / "placed.snapshot"
    done = _record(control_plane.kubeconfig, out)
    assert done.returncode == 0, done.stderr
    replay = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "simulate", "--snapshot", str(out),
         "--save-placed", str(after), "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    placed = Counter(
        p["spec"]["nodeName"][len(pool.name) + 1 :]
        for p in snapshot.load(after).pods
        if p["metadata"]["namespace"] == pool.namespace
        and p["metadata"].get("labels", {}).get("app") == "web"
    )
    assert sum(placed.values()) == REPLICAS
    assert pool.reference("web", with_workloads=False) == Counter({"a": REPLICAS})
    assert _spread(placed) == _spread(pool.reference("web", with_workloads=True))
    assert placed["b"] + placed["c"] > 0


def test_device_objects_are_recorded_and_simulate_allocates_from_them(
    control_plane, namespace, tmp_path
):
    token = secrets.token_hex(3)
    pool_name = f"snap-dra-{token}"
    driver = dra.Driver(f"gpu-{token}.example.com", gpus=2)
    nodes = [kwok_node(f"{pool_name}-{i}", pool_name) for i in range(2)]
    gpu = driver.device_class("gpu")
    slices = [driver.slice(n["metadata"]["name"], "a100") for n in nodes]
    gpu_class = gpu["metadata"]["name"]
    claims = [
        dra.claim(namespace, "two", dra.claim_spec(dra.request("gpu", gpu_class, 2))),
        dra.claim(namespace, "three", dra.claim_spec(dra.request("gpu", gpu_class, 3))),
    ]
    pods = [
        dra.pod(namespace, "wants-two", "nobody", pool_name, claims=["two"]),
        dra.pod(namespace, "wants-three", "nobody", pool_name, claims=["three"]),
    ]
    one = dra.template(namespace, "one-gpu", dra.claim_spec(dra.request("gpu", gpu_class, 1)))
    control_plane.create([*nodes, gpu, *slices, *claims, one])
    control_plane.create(pods)
    try:
        out, placed_out = tmp_path / "cluster.snapshot", tmp_path / "placed.snapshot"
        done = _record(Path(control_plane.kubeconfig), out)
        assert done.returncode == 0, done.stderr
        assert "device objects" in done.stdout
        taken = snapshot.load(out)
        names = {k: {o["metadata"]["name"] for o in v} for k, v in taken.devices.items()}
        assert gpu_class in names["deviceclasses"]
        assert "one-gpu" in names["resourceclaimtemplates"]
        assert {s["metadata"]["name"] for s in slices} <= names["resourceslices"]
        recorded = {
            c["metadata"]["name"]: c
            for c in taken.devices["resourceclaims"]
            if c["metadata"]["namespace"] == namespace
        }
        assert set(recorded) == {"two", "three"}
        # As the API server holds it (it defaults allocationMode).
        (request,) = recorded["two"]["spec"]["devices"]["requests"]
        assert request["exactly"] == {
            "deviceClassName": gpu_class,
            "allocationMode": "ExactCount",
            "count": 2,
        }
        mine = {
            p["metadata"]["name"]: p for p in taken.pods if p["metadata"]["namespace"] == namespace
        }
        assert mine["wants-two"]["spec"]["resourceClaims"] == [
            {"name": "c0", "resourceClaimName": "two"}
        ]

        replay = subprocess.run(
            [sys.executable, "-m", "kubesalvo.sched.cli", "simulate", "--snapshot", str(out),
             "--json", "--save-placed", str(placed_out)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert replay.returncode == 0, replay.stderr
        placed = snapshot.load(placed_out)
        mine = {
            p["metadata"]["name"]: p for p in placed.pods if p["metadata"]["namespace"] == namespace
        }
        assert mine["wants-two"]["spec"].get("nodeName") in {n["metadata"]["name"] for n in nodes}
        assert not mine["wants-three"]["spec"].get("nodeName")  # no node has 3 GPUs
        after = {
            c["metadata"]["name"]: c
            for c in placed.devices["resourceclaims"]
            if c["metadata"]["namespace"] == namespace
        }
        by_name = {n["metadata"]["name"]: n for n in nodes}
        assert dra.check_allocations(mine.values(), after, slices, by_name) == []
    finally:
        delete_pods(control_plane, pods)
        control_plane.delete([*claims, *slices, gpu, one])
        delete_nodes(control_plane, nodes)
