"""The bind POST's histogram of ``kubesalvo run`` next to upstream kube-scheduler's.

kube-scheduler times its Bind extension point (DefaultBinder's POST) in
``scheduler_framework_extension_point_duration_seconds``; kubesalvo observes its bind POSTs
under the same name. The same pods (three per scheduler, each under a profile of its own)
are bound by both on one control plane; each /metrics is scraped as Prometheus would, and
the Bind series must have the same labels and buckets, and count one per bound pod.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesalvo.sched.cluster import start_kube_scheduler
from tests.sched.test_app import CONFIG, SchedulerProcess, delete_nodes, delete_pods, kwok_node
from tests.sched.test_metrics_upstream import upstream_metrics

pytestmark = pytest.mark.integration

METRIC = "scheduler_framework_extension_point_duration_seconds"
PODS = 3


def bind_series(text: str, profile: str) -> dict[str, Any]:
    """The Bind series of ``profile``: its label names, bucket bounds and count."""
    for family in text_string_to_metric_families(text):
        if family.name != METRIC:
            continue
        samples = [
            s
            for s in family.samples
            if s.labels.get("extension_point") == "Bind" and s.labels.get("profile") == profile
        ]
        return {
            "labels": sorted({k for s in samples for k in s.labels if k != "le"}),
            "status": sorted({s.labels["status"] for s in samples}),
            "buckets": [s.labels["le"] for s in samples if s.name.endswith("_bucket")],
            "count": sum(s.value for s in samples if s.name.endswith("_count")),
        }
    return {}


def test_the_bind_extension_points_histogram_matches_kube_schedulers(
    control_plane, namespace, tmp_path
):
    pool = f"bind-{secrets.token_hex(3)}"
    taint = {"key": "kubesalvo.io/test-pool", "value": pool, "effect": "NoSchedule"}
    nodes = [{**kwok_node(f"{pool}-0", pool), "spec": {"taints": [taint]}}]
    control_plane.create(nodes)

    def pod(name: str, scheduler: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "schedulerName": scheduler,
                "nodeSelector": {"kubesalvo.io/test-pool": pool},
                "tolerations": [{**taint, "operator": "Equal"}],
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
            },
        }

    upstream_name = f"upstream-{secrets.token_hex(3)}"
    upstream = start_kube_scheduler(
        control_plane, extra={"profiles": [{"schedulerName": upstream_name}]}, name=upstream_name
    )
    ours = SchedulerProcess(tmp_path, control_plane.kubeconfig, CONFIG.format(max_burst=100))
    created = [pod(f"ours-{i}", "kubesalvo") for i in range(PODS)]
    created += [pod(f"theirs-{i}", upstream_name) for i in range(PODS)]
    try:
        ours.wait_ready()
        control_plane.create(created)

        def readings() -> tuple[dict[str, Any], dict[str, Any]]:
            mine = ours.get(f"http://127.0.0.1:{ours.metrics_port}/metrics")[1].decode()
            theirs = upstream_metrics(upstream.metrics_url, control_plane.token)
            return bind_series(mine, "kubesalvo"), bind_series(theirs, upstream_name)

        deadline = time.monotonic() + 90
        while True:
            mine, theirs = readings()
            if mine.get("count") == PODS and theirs.get("count") == PODS:
                break
            assert time.monotonic() < deadline, (mine, theirs)
            time.sleep(0.5)
        assert mine == theirs
        assert mine["labels"] == ["extension_point", "profile", "status"]
        assert mine["status"] == ["Success"]
    finally:
        ours.kill()
        upstream.stop()
        delete_pods(control_plane, created)
        delete_nodes(control_plane, nodes)
