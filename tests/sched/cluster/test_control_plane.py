"""The real local control plane end to end: apiserver, kwok nodes, controller manager and
upstream kube-scheduler as the baseline."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kubesalvo.sched import cli
from kubesalvo.sched.cluster import (
    ApiClient,
    ApiError,
    ControlPlane,
    Matching,
    StartError,
    build,
    controlplane,
    start_kube_scheduler,
)
from kubesalvo.sched.cluster.api import is_ready, pod_running

pytestmark = pytest.mark.integration


def deployment(namespace: str, name: str, replicas: int) -> dict[str, object]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                        }
                    ],
                },
            },
        },
    }


def test_apiserver_is_ready_and_reports_the_built_version(
    control_plane: ControlPlane, pytestconfig: pytest.Config
) -> None:
    async def probe(client: ApiClient) -> tuple[dict[str, object], int]:
        version = await client.request("GET", "/version")
        async with client.session.get(client.server + "/readyz") as response:
            return version, response.status

    version, readyz = control_plane.call(probe)
    assert readyz == 200
    assert version["gitVersion"] == control_plane.kubernetes
    # The release tests/conftest.py's --kubernetes asked for (the default one if none).
    asked = build.shipped_versions(kubernetes=pytestconfig.getoption("--kubernetes"))
    assert control_plane.kubernetes == asked.kubernetes


def test_kubeconfig_works_with_the_built_kubectl(control_plane: ControlPlane) -> None:
    done = subprocess.run(
        [str(control_plane.kubectl), "version", "-o", "json"],
        env={**os.environ, "KUBECONFIG": str(control_plane.kubeconfig)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert f'"gitVersion": "{control_plane.kubernetes}"' in done.stdout


def test_kwok_makes_200_fake_nodes_ready(control_plane: ControlPlane) -> None:
    nodes = control_plane.add_nodes(200)

    async def ready(client: ApiClient) -> set[str]:
        listing = await client.request("GET", "/api/v1/nodes")
        return {n["metadata"]["name"] for n in listing["items"] if is_ready(n)}

    assert {node["metadata"]["name"] for node in nodes} <= control_plane.call(ready)


def test_deployment_pods_are_bound_by_kube_scheduler_and_run_on_kwok_nodes(
    control_plane: ControlPlane, namespace: str
) -> None:
    control_plane.add_nodes(200)
    control_plane.create([deployment(namespace, "web", 50)])
    pods = f"/api/v1/namespaces/{namespace}/pods"

    async def wait(client: ApiClient, condition: Matching) -> None:
        await client.wait_for(pods, condition, timeout=60)

    # No scheduler yet: the controller manager alone creates the pods, which stay pending.
    control_plane.call(lambda client: wait(client, Matching(lambda pod: True, count=50)))
    with start_kube_scheduler(control_plane):
        control_plane.call(lambda client: wait(client, Matching(pod_running, count=50)))
        # Each binding is reported as a Scheduled event by default-scheduler.
        events = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        scheduled = Matching(
            lambda e: (
                e["reason"] == "Scheduled" and e["reportingController"] == "default-scheduler"
            ),
            count=50,
        )
        control_plane.call(lambda client: client.wait_for(events, scheduled, timeout=30))

    async def listing(client: ApiClient) -> list[dict[str, Any]]:
        return (await client.request("GET", pods))["items"]

    async def node_names(client: ApiClient) -> set[str]:
        return {
            n["metadata"]["name"] for n in (await client.request("GET", "/api/v1/nodes"))["items"]
        }

    items = control_plane.call(listing)
    assert len(items) == 50
    # Earlier tests of the session may have added more nodes than these 200: any node
    # the API server has is a kwok node here.
    assert {pod["spec"]["nodeName"] for pod in items} <= control_plane.call(node_names)
    assert all(pod["status"]["podIP"].startswith("10.") for pod in items)


def test_create_all_resolves_any_kind_through_discovery(
    control_plane: ControlPlane, namespace: str
) -> None:
    objects = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"{namespace}-high"},
            "value": 1000,
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": namespace},
            "data": {"a": "1"},
        },
    ]
    assert control_plane.create(objects) == 2
    assert control_plane.create(objects, exist_ok=True) == 0


def test_up_refuses_a_folder_where_a_control_plane_runs(control_plane: ControlPlane) -> None:
    with pytest.raises(StartError, match="already running"):
        asyncio.run(controlplane.start(control_plane.dir, control_plane.bin_dir))
    assert all(control_plane.running().values())
    assert control_plane.kubeconfig.exists()


def test_cluster_down_leaves_no_processes_or_files(tmp_path: Path) -> None:
    folder = tmp_path / "cluster"
    assert cli.main(["cluster", "up", "--nodes", "5", "--dir", str(folder)]) == 0
    start_kube_scheduler(ControlPlane.load(folder))
    started = ControlPlane.load(folder)
    assert set(started.pids) == {*controlplane.COMPONENTS, "kube-scheduler"}
    assert all(started.running().values())

    assert cli.main(["cluster", "down", "--dir", str(folder)]) == 0
    assert not any(started.running().values())
    assert not folder.exists()


def test_create_all_raises_the_servers_refusal(control_plane: ControlPlane, namespace: str) -> None:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "twice", "namespace": namespace},
    }
    control_plane.create([config_map])
    with pytest.raises(ApiError) as refused:
        control_plane.create(
            [config_map, {**config_map, "metadata": {"name": "other", "namespace": namespace}}]
        )
    assert refused.value.status == 409
    assert refused.value.reason == "AlreadyExists"


def test_wait_for_times_out_saying_how_far_it_got(
    control_plane: ControlPlane, namespace: str
) -> None:
    never = Matching(lambda pod: True, names=[f"{namespace}/absent"])
    with pytest.raises(TimeoutError, match="0/1 objects matched"):
        control_plane.call(
            lambda client: client.wait_for(f"/api/v1/namespaces/{namespace}/pods", never, 1.5)
        )
