"""``scheduler_queue_incoming_pods_total`` and ``scheduler_plugin_execution_duration_seconds``
of ``kubesalvo run`` next to upstream kube-scheduler's, on one control plane.

Each scheduler (a schedulerName of its own) gets the same pods: ten that fit, one larger
than any node (parked by NodeResourcesFit) and one held by a scheduling gate that is then
removed. The incoming counts by (queue, event) must be equal. kube-scheduler times its
plugins in a 10% sample of its cycles; pods are then added in batches until its sample
holds DefaultBinder's Bind, and both histograms must have that series and the same buckets.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesalvo.sched.cluster import start_kube_scheduler
from tests.sched.test_app import CONFIG, SchedulerProcess, delete_pods
from tests.sched.test_metrics_upstream import upstream_metrics

pytestmark = pytest.mark.integration

INCOMING = "scheduler_queue_incoming_pods"
PLUGINS = "scheduler_plugin_execution_duration_seconds"
BIND = ("DefaultBinder", "Bind", "Success")


def incoming(text: str) -> dict[tuple[str, str], float]:
    for family in text_string_to_metric_families(text):
        if family.name == INCOMING:
            return {
                (s.labels["queue"], s.labels["event"]): s.value
                for s in family.samples
                if s.name.endswith("_total") and s.value
            }
    return {}


def plugin_buckets(text: str) -> dict[tuple[str, str, str], list[str]]:
    """Each (plugin, extension_point, status) series and its bucket bounds."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for family in text_string_to_metric_families(text):
        if family.name == PLUGINS:
            for s in family.samples:
                if s.name.endswith("_bucket"):
                    key = (s.labels["plugin"], s.labels["extension_point"], s.labels["status"])
                    found.setdefault(key, []).append(s.labels["le"])
    return found


def pod(namespace: str, name: str, scheduler: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    container |= spec.pop("container", {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{name}-{scheduler}", "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "tolerations": [{"operator": "Exists"}],
            "containers": [container],
            **spec,
        },
    }


def test_queue_incoming_and_plugin_durations_match_kube_scheduler(
    control_plane, namespace, tmp_path
):
    node_name = f"incoming-{secrets.token_hex(3)}"
    allocatable = {"cpu": "4", "memory": "16Gi", "pods": "1000"}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node_name,
            "labels": {"kubernetes.io/hostname": node_name},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }
    control_plane.create([node], exist_ok=True)
    upstream_name = f"upstream-{secrets.token_hex(3)}"
    upstream = start_kube_scheduler(
        control_plane, extra={"profiles": [{"schedulerName": upstream_name}]}, name=upstream_name
    )
    ours_name = f"kubesalvo-{secrets.token_hex(3)}"
    config = CONFIG.format(max_burst=100) + f"profiles:\n- schedulerName: {ours_name}\n"
    ours = SchedulerProcess(tmp_path, control_plane.kubeconfig, config)
    created: list[dict[str, Any]] = []

    def readings() -> tuple[str, str]:
        mine = ours.get(f"http://127.0.0.1:{ours.metrics_port}/metrics")[1].decode()
        return mine, upstream_metrics(upstream.metrics_url, control_plane.token)

    def settle(expected: dict[tuple[str, str], float]) -> None:
        deadline = time.monotonic() + 90
        while True:
            seen = tuple(incoming(text) for text in readings())
            if seen == (expected, expected):
                return
            assert time.monotonic() < deadline, seen
            time.sleep(0.5)

    try:
        ours.wait_ready()
        for scheduler in (ours_name, upstream_name):
            created += [pod(namespace, f"fits-{i}", scheduler) for i in range(10)]
            created.append(
                pod(
                    namespace,
                    "too-big",
                    scheduler,
                    container={"resources": {"requests": {"cpu": "640"}}},
                )
            )
            created.append(
                pod(namespace, "gated", scheduler, schedulingGates=[{"name": "example.com/w"}])
            )
        control_plane.create(created)
        settle(
            {
                ("active", "UnschedulablePodAdd"): 11.0,
                ("unschedulable", "UnschedulablePodAdd"): 1.0,
                ("unschedulable", "ScheduleAttemptFailure"): 1.0,
            }
        )
        for scheduler in (ours_name, upstream_name):
            path = f"/api/v1/namespaces/{namespace}/pods/gated-{scheduler}"
            body = {"spec": {"schedulingGates": None}}
            control_plane.call(lambda client, path=path, body=body: client.patch(path, body))
        settle(
            {
                ("active", "UnschedulablePodAdd"): 11.0,
                ("unschedulable", "UnschedulablePodAdd"): 1.0,
                ("unschedulable", "ScheduleAttemptFailure"): 1.0,
                ("active", "UnschedulablePodUpdatePodSchedulingGatesEliminated"): 1.0,
            }
        )

        # Batches until kube-scheduler's 10% sample caught a bind (each batch of 20 misses
        # it with a chance of 0.9**20 = 12%). Its binds are not always sampled (a run of
        # 200 sampled none while its Filter and PreFilter series grew), so the buckets are
        # compared with any of its series of the family: one histogram, one set of bounds.
        for batch in range(10):
            extra = [pod(namespace, f"more-{batch}-{i}", upstream_name) for i in range(20)]
            created += extra
            control_plane.create(extra)
            deadline = time.monotonic() + 60
            while BIND not in (theirs := plugin_buckets(readings()[1])):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            if BIND in theirs or (theirs and batch >= 2):
                break
        mine = plugin_buckets(readings()[0])
        assert theirs and BIND in mine, (theirs, mine)
        bounds = {tuple(b) for b in theirs.values()}
        assert len(bounds) == 1, bounds
        assert tuple(mine[BIND]) in bounds
        if BIND in theirs:
            assert mine[BIND] == theirs[BIND]
    finally:
        delete_pods(control_plane, created)
        ours.kill()
        upstream.stop()
