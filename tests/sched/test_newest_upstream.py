"""The core of the runtime on the newest shipped Kubernetes release (``newest_control_plane``,
v1.37 today), beside the default release the rest of the suite uses: its control plane
starts and reports its version, ``kubesalvo run`` binds a mixed burst exactly once and
feasibly, and that release's kube-controller-manager and kube-scheduler run Deployments.

The whole integration suite runs on that release too with
``pytest -m integration --kubernetes v1.37.2``.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest

from kubesalvo.core.synthetic import namespace_objects, priority_class_objects
from kubesalvo.sched.cluster import ApiClient, Matching, start_kube_scheduler
from kubesalvo.sched.cluster.api import pod_running
from kubesalvo.sched.cluster.controlplane import ControlPlane
from tests.conftest import newest_release
from tests.sched.cluster.test_control_plane import deployment
from tests.sched.test_app import (
    CONFIG,
    SchedulerProcess,
    all_decided,
    burst,
    list_objects,
    ours,
    pod_scheduled,
    problems_now,
    settled,
)

pytestmark = pytest.mark.integration

NODES = 100


@pytest.fixture(scope="module")
def newest(newest_control_plane: ControlPlane) -> ControlPlane:
    newest_control_plane.add_nodes(NODES)
    newest_control_plane.create(namespace_objects(), exist_ok=True)
    newest_control_plane.create(priority_class_objects(), exist_ok=True)
    return newest_control_plane


def test_the_newest_release_is_newer_than_the_default_and_reports_itself(
    newest: ControlPlane,
) -> None:
    assert newest.kubernetes == newest_release()
    version = newest.call(lambda client: client.request("GET", "/version"))
    assert version["gitVersion"] == newest_release()
    done = subprocess.run(
        [str(newest.kubectl), "version", "-o", "json"],
        env={**os.environ, "KUBECONFIG": str(newest.kubeconfig)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert f'"gitVersion": "{newest_release()}"' in done.stdout


def test_kubesalvo_run_binds_a_mixed_burst_once_and_feasibly(
    newest: ControlPlane, tmp_path: Any
) -> None:
    process = SchedulerProcess(tmp_path, newest.kubeconfig, CONFIG.format(max_burst=1000))
    try:
        process.wait_ready()
        pods = burst(300, seed=7)
        newest.create(pods)
        settled(process, 180, lambda: all_decided(newest, pods))
        listed = ours(pods, list_objects(newest, "/api/v1/pods"))
        bound = [p for p in listed if p["spec"].get("nodeName")]
        unbound = [p for p in listed if not p["spec"].get("nodeName")]
        # The mixed shape holds pods that fit nowhere on purpose (and pod affinity or spread
        # a small fleet cannot give): each unbound pod was reported Unschedulable.
        for pod in unbound:
            condition = pod_scheduled(pod)
            assert condition is not None and condition["reason"] == "Unschedulable", pod
        assert len(bound) >= 200
        # Exactly once: every successful bind is one pod bound now.
        assert process.metric("kubesalvo_binds_total", result="bound") == len(bound)
        assert problems_now(newest) == []
    finally:
        process.kill()


def test_its_controller_manager_and_kube_scheduler_run_a_deployment(
    newest: ControlPlane, tmp_path: Any
) -> None:
    namespace = f"newest-{os.getpid()}"
    newest.create([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}])
    newest.create([deployment(namespace, "web", 30)])
    pods = f"/api/v1/namespaces/{namespace}/pods"

    async def wait(client: ApiClient) -> None:
        await client.wait_for(pods, Matching(pod_running, count=30), timeout=120)

    with start_kube_scheduler(newest):
        newest.call(wait)
    listed: list[dict[str, Any]] = list_objects(newest, pods)
    assert len(listed) == 30
    assert all(p["spec"]["nodeName"] for p in listed)
