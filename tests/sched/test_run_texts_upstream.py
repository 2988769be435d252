"""FailedScheduling texts of ``kubesalvo run`` next to upstream kube-scheduler's own.

Both schedulers run two profiles against the same control plane: the default one
(DynamicResources and DefaultPreemption as postFilter plugins, in that order) and one
with DynamicResources disabled. Each profile of each scheduler gets the same
unschedulable pods, and the PodScheduled=False messages written must be equal,
character for character. With DynamicResources:

* a pod that fits nowhere (more cpu than any node has): the filter part, then
  DynamicResources' "no new claims to deallocate" joined to preemption's text;
* a pod whose required node affinity names a node that does not exist (NodeAffinity's
  PreFilter result leaves every node out);
* a pod whose required node affinity conflicts with itself (NodeAffinity's PreFilter
  rejects it before DynamicResources' PreFilter runs, so DynamicResources' PostFilter
  finds no state of its own and ends the post-filter run with an error whose text,
  "not found", is the whole post-filter part).

Without it, preemption's text stands alone in both cases.
"""

from __future__ import annotations

import copy
import re
import secrets
import time
from typing import Any

import pytest

from kubesalvo.sched.cluster import start_kube_scheduler
from tests.sched.test_app import CONFIG, SchedulerProcess, delete_pods, list_objects, pod_scheduled

pytestmark = pytest.mark.integration

NO_DYNAMIC_RESOURCES = {"multiPoint": {"disabled": [{"name": "DynamicResources"}]}}

OURS = (
    CONFIG.format(max_burst=100)
    + """\
profiles:
- schedulerName: kubesalvo
- schedulerName: kubesalvo-no-dra
  plugins:
    multiPoint:
      disabled:
      - name: DynamicResources
"""
)


def _pod(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
            **spec,
        },
    }


CASES: dict[str, dict[str, Any]] = {
    "too-big": {
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "640"}},
            }
        ]
    },
    "no-such-node": {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["nowhere"]}
                            ]
                        }
                    ]
                }
            }
        }
    },
    "conflict": {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["x"]},
                                {"key": "metadata.name", "operator": "In", "values": ["y"]},
                            ]
                        }
                    ]
                }
            }
        }
    },
}


def test_unschedulable_pods_get_the_same_text_from_kubesalvo_and_kube_scheduler(
    control_plane, namespace, tmp_path
):
    node_name = f"texts-{secrets.token_hex(3)}"
    allocatable = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    control_plane.create(
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": node_name,
                    "labels": {"kubernetes.io/hostname": node_name},
                    "annotations": {"kwok.x-k8s.io/node": "fake"},
                },
                "status": {"allocatable": allocatable, "capacity": allocatable},
            }
        ]
    )
    upstream_name = f"upstream-{secrets.token_hex(3)}"
    profiles = {
        "kubesalvo": upstream_name,
        "kubesalvo-no-dra": f"{upstream_name}-no-dra",
    }
    upstream = start_kube_scheduler(
        control_plane,
        extra={
            "profiles": [
                {"schedulerName": upstream_name},
                {"schedulerName": f"{upstream_name}-no-dra", "plugins": NO_DYNAMIC_RESOURCES},
            ]
        },
        name=upstream_name,
    )
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, OURS, "texts")
    pods = []
    for ours, theirs in profiles.items():
        for case, spec in CASES.items():
            pods.append(_pod(namespace, f"{case}-{ours}", schedulerName=ours, **spec))
            pods.append(_pod(namespace, f"{case}-{theirs}", schedulerName=theirs, **spec))
    pods = copy.deepcopy(pods)
    try:
        process.wait_ready()
        control_plane.create(pods)
        path = f"/api/v1/namespaces/{namespace}/pods"

        def messages() -> dict[str, str]:
            found = {}
            for pod in list_objects(control_plane, path):
                condition = pod_scheduled(pod)
                if condition is not None and condition.get("status") == "False":
                    found[pod["metadata"]["name"]] = condition["message"]
            return found

        deadline = time.monotonic() + 120
        while len(written := messages()) < len(pods):
            assert time.monotonic() < deadline, f"reported so far: {written}"
            time.sleep(1.0)
        for ours, theirs in profiles.items():
            for case in CASES:
                assert written[f"{case}-{ours}"] == written[f"{case}-{theirs}"], (case, ours)
        too_big, conflict = written["too-big-kubesalvo"], written["conflict-kubesalvo"]
        # Every node of the cluster (other tests may have left some) lacks the cpu.
        assert re.match(r"0/(\d+) nodes are available: \1 Insufficient cpu\. ", too_big)
        assert "no new claims to deallocate, preemption: " in too_big
        assert conflict.endswith("pod affinity terms conflict. not found")
        for case in CASES:
            text = written[f"{case}-kubesalvo-no-dra"]
            assert re.search(r"\. preemption: 0/(\d+) nodes are available: \1 ", text)
            assert "claims" not in text and not text.endswith("not found")
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, pods)
        control_plane.call(lambda client: client.request("DELETE", f"/api/v1/nodes/{node_name}"))
