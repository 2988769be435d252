"""The workloads behind default spreading: their informers on the real API server, the
index by namespace that feeds ``place_burst(workloads=...)``, and ``kubesalvo run`` without
RBAC on them (one warning, ready, pods still scheduled, no default spreading)."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.informers import Informer
from kubesalvo.sched.informers.models import ReplicaSet, Service, StatefulSet
from kubesalvo.sched.informers.store import ADDED, DELETED, MODIFIED, Change
from kubesalvo.sched.informers.workloads import WORKLOAD_KINDS, Workloads
from tests.helpers.deploy import bind_rules, service_account_token, token_kubeconfig
from tests.sched.cycle.test_burst import own_node, toleration
from tests.sched.test_app import CONFIG, SchedulerProcess, delete_pods, list_objects, settled

SERVICE = b"""{"kind": "Service", "apiVersion": "v1",
  "metadata": {"name": "web", "namespace": "a", "uid": "s1", "resourceVersion": "5",
    "labels": {"tier": "front"}, "annotations": {"x": "y"}},
  "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], "clusterIP": "10.0.0.1"}}"""

STATEFULSET = b"""{"kind": "StatefulSet", "apiVersion": "apps/v1",
  "metadata": {"name": "db", "namespace": "a", "uid": "t1", "resourceVersion": "6"},
  "spec": {"replicas": 3, "serviceName": "db",
    "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]},
    "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": []}}}}"""


def test_a_workload_decodes_only_its_identity_and_selector():
    index = Workloads()
    index.handler("Service")(Change(ADDED, msgspec.json.decode(SERVICE, type=Service)))
    index.handler("StatefulSet")(Change(ADDED, msgspec.json.decode(STATEFULSET, type=StatefulSet)))
    assert index.in_namespaces(["a"]) == [
        {
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "a", "uid": "s1", "resourceVersion": "5"},
            "spec": {"selector": {"app": "web"}},
        },
        {
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "a", "uid": "t1", "resourceVersion": "6"},
            "spec": {
                "selector": {
                    "matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]
                }
            },
        },
    ]


def _rs(name: str, namespace: str, app: str, rv: str) -> ReplicaSet:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": namespace, "uid": name, "resourceVersion": rv},
            "spec": {"selector": {"matchLabels": {"app": app}}},
        },
        ReplicaSet,
    )


def test_the_index_follows_changes_per_namespace():
    index = Workloads()
    apply = index.handler("ReplicaSet")
    apply(Change(ADDED, _rs("one", "a", "x", "1")))
    apply(Change(ADDED, _rs("two", "b", "y", "2")))
    assert [w["metadata"]["name"] for w in index.in_namespaces(["a"])] == ["one"]
    assert [w["metadata"]["name"] for w in index.in_namespaces(["a", "b", "c"])] == ["one", "two"]
    apply(Change(MODIFIED, _rs("one", "a", "z", "3"), _rs("one", "a", "x", "1")))
    (changed,) = index.in_namespaces(["a"])
    assert changed["spec"]["selector"] == {"matchLabels": {"app": "z"}}
    apply(Change(DELETED, _rs("one", "a", "z", "3")))
    assert index.in_namespaces(["a"]) == []
    assert len(index) == 1


@pytest.mark.integration
async def test_the_informers_keep_the_clusters_workloads(api: ApiClient, namespace: str):
    index = Workloads()
    informers: list[Informer[Any]] = [
        Informer(api, resource, index.handler(kind)) for resource, kind in WORKLOAD_KINDS
    ]
    for informer in informers:
        informer.start()
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    controller = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "legacy", "namespace": namespace},
        "spec": {
            "replicas": 0,
            "selector": {"app": "legacy"},
            "template": {
                "metadata": {"labels": {"app": "legacy"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    try:
        await asyncio.wait_for(asyncio.gather(*(i.synced.wait() for i in informers)), 30)
        await api.request(
            "POST", f"/api/v1/namespaces/{namespace}/services", body=msgspec.json.encode(service)
        )
        await api.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/replicationcontrollers",
            body=msgspec.json.encode(controller),
        )
        deadline = asyncio.get_running_loop().time() + 20
        while len(index.in_namespaces([namespace])) < 2:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
        found = {(w["kind"], w["metadata"]["name"]): w for w in index.in_namespaces([namespace])}
        assert found[("Service", "web")]["spec"] == {"selector": {"app": "web"}}
        assert found[("ReplicationController", "legacy")]["spec"] == {"selector": {"app": "legacy"}}
        await api.request("DELETE", f"/api/v1/namespaces/{namespace}/services/web")
        while len(index.in_namespaces([namespace])) > 1:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)
    finally:
        for informer in informers:
            await informer.stop()


# --- without RBAC on workloads ----------------------------------------------------------

# What kubesalvo needs besides the workloads (kube-scheduler's ClusterRole, less them).
RULES = [
    {"apiGroups": [""], "resources": ["nodes", "namespaces"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},
    {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
    {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch", "update"]},
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
    {
        "apiGroups": ["policy"],
        "resources": ["poddisruptionbudgets"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["deviceclasses", "resourceclaims", "resourceslices"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": [""],
        "resources": ["persistentvolumeclaims", "persistentvolumes"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["storage.k8s.io"],
        "resources": ["storageclasses", "csinodes", "csidrivers", "csistoragecapacities"],
        "verbs": ["get", "list", "watch"],
    },
]


def _restricted_kubeconfig(control_plane: Any, namespace: str, folder: Path, name: str) -> Path:
    bind_rules(control_plane, namespace, name, RULES, name=name)
    token = service_account_token(control_plane, namespace, name)
    return token_kubeconfig(control_plane, token, folder / "restricted.kubeconfig")


@pytest.mark.integration
def test_without_rbac_on_workloads_run_warns_once_and_still_schedules(
    control_plane, namespace, tmp_path
):
    role = f"no-workloads-{secrets.token_hex(3)}"
    kubeconfig = _restricted_kubeconfig(control_plane, namespace, tmp_path, role)
    node = own_node(f"restricted-{secrets.token_hex(3)}", "restricted", "2")
    control_plane.create([node])
    process = SchedulerProcess(tmp_path, kubeconfig, CONFIG.format(max_burst=100), "restricted")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "plain", "namespace": namespace},
        "spec": {
            "schedulerName": "kubesalvo",
            "tolerations": toleration("restricted"),
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
    try:
        process.wait_ready()
        control_plane.create([pod])
        path = f"/api/v1/namespaces/{namespace}/pods"
        settled(
            process,
            60,
            lambda: all(p["spec"].get("nodeName") for p in list_objects(control_plane, path)),
        )
        warnings = [
            line
            for line in process.log.read_text(errors="replace").splitlines()
            if "PodTopologySpread default constraints are off" in line
        ]
        assert len(warnings) == 1
        for plural in ("services", "replicationcontrollers", "replicasets", "statefulsets"):
            assert plural in warnings[0]
    finally:
        process.kill()
        delete_pods(control_plane, [pod])
        node_path = f"/api/v1/nodes/{node['metadata']['name']}"
        rbac = "/apis/rbac.authorization.k8s.io/v1"

        async def cleanup(client: Any) -> None:
            await client.request("DELETE", node_path)
            await client.request("DELETE", f"{rbac}/clusterrolebindings/{role}")
            await client.request("DELETE", f"{rbac}/clusterroles/{role}")

        control_plane.call(cleanup)
