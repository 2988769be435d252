"""Issue 33 on a real ``kubesalvo run``: the latency stage histograms and the adaptive
gathering window, read back from /metrics after pods are bound.

A lone pod created on an idle scheduler is bound without waiting out the gathering
window; 500 pods created at once are placed in few bursts; every bound pod is counted in
each per-pod stage, every burst in each per-burst stage, and the parts of a pod's time add
up to no more than the whole (creation event to bind POST): the wait in the queue, the
burst's placing (popped until its binds are handed over) and the wait for the POST to go
out (bind_wait: a bind slot, the client's limiter, the event loop's turn).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest

from tests.sched.test_app import (
    CONFIG,
    SchedulerProcess,
    delete_nodes,
    kwok_node,
    list_objects,
    settled,
)

pytestmark = pytest.mark.integration

# A long bound, so that a lone pod that waited it out could not pass for one that did not.
WINDOW = 0.2
SURGE = 500
NODES = 10
# The test's own schedulerName: on the suite's shared control plane other tests leave pods
# pending for "kubesalvo", which this process would bind and count too.
PROFILE = f"kubesalvo-latency-{secrets.token_hex(3)}"
STAGES = (
    "queue_wait",
    "gathering",
    "encode",
    "kernel",
    "assume",
    "placing",
    "bind_wait",
    "bind",
)


def pool_pods(namespace: str, pool: str, prefix: str, count: int) -> list[dict[str, Any]]:
    taint = {"key": "kubesalvo.io/test-pool", "value": pool, "effect": "NoSchedule"}
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{prefix}-{i}", "namespace": namespace},
            "spec": {
                "schedulerName": PROFILE,
                "nodeSelector": {"kubesalvo.io/test-pool": pool},
                "tolerations": [{**taint, "operator": "Equal"}],
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                    }
                ],
            },
        }
        for i in range(count)
    ]


def figures(process: SchedulerProcess) -> dict[str, float]:
    """The counts and sums of the latency histograms, and the bursts placed."""
    found = {"bursts": process.metric("kubesalvo_burst_size_count")}
    for stage in STAGES:
        for part in ("count", "sum"):
            found[f"{stage}_{part}"] = process.metric(
                f"kubesalvo_stage_duration_seconds_{part}", stage=stage
            )
    for part in ("count", "sum"):
        found[f"whole_{part}"] = process.metric(f"kubesalvo_pod_event_to_bind_seconds_{part}")
        found[f"bind_point_{part}"] = process.metric(
            f"scheduler_framework_extension_point_duration_seconds_{part}",
            extension_point="Bind",
            status="Success",
            profile=PROFILE,
        )
    return found


def bound_in(control_plane: Any, namespace: str) -> int:
    listed = list_objects(control_plane, f"/api/v1/namespaces/{namespace}/pods")
    return sum(1 for p in listed if p["spec"].get("nodeName"))


def test_a_lone_pod_does_not_wait_and_a_surge_is_placed_in_few_bursts_with_stages_adding_up(
    control_plane, namespace, tmp_path
):
    pool = f"latency-{secrets.token_hex(3)}"
    taint = {"key": "kubesalvo.io/test-pool", "value": pool, "effect": "NoSchedule"}
    nodes = [
        {**kwok_node(f"{pool}-{i}", pool, cpu="64", memory="256Gi"), "spec": {"taints": [taint]}}
        for i in range(NODES)
    ]
    control_plane.create(nodes)
    config = (
        CONFIG.format(max_burst=1000).replace(
            "burstGatheringWindow: 20ms", f"burstGatheringWindow: {WINDOW * 1000:.0f}ms"
        )
        + f"profiles:\n- schedulerName: {PROFILE}\n"
    )
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "latency")
    try:
        process.wait_ready()
        # The nodes are in the scheduler's cache before the first pod comes.
        settled(process, 60, lambda: True)
        time.sleep(1.0)

        before = figures(process)
        control_plane.create(pool_pods(namespace, pool, "lone", 1))
        settled(process, 60, lambda: bound_in(control_plane, namespace) == 1)
        lone = figures(process)
        assert lone["bursts"] - before["bursts"] == 1
        assert lone["gathering_count"] - before["gathering_count"] == 1
        # A fixed window would have slept all of it; the lone pod was taken at once.
        assert lone["gathering_sum"] - before["gathering_sum"] < WINDOW
        assert lone["whole_count"] - before["whole_count"] == 1

        control_plane.create(pool_pods(namespace, pool, "surge", SURGE))
        settled(process, 240, lambda: bound_in(control_plane, namespace) == SURGE + 1)
        after = figures(process)
        bursts = after["bursts"] - lone["bursts"]
        print(f"{SURGE} pods created at once: {bursts:.0f} bursts; figures {after}")
        assert 1 <= bursts <= SURGE / 20  # on average at least 20 pods a burst

        # Every bound pod once in each per-pod histogram, every burst once in each
        # per-burst one.
        bound = SURGE + 1
        for name in ("queue_wait", "bind_wait", "bind", "whole", "bind_point"):
            assert after[f"{name}_count"] == bound, name
        for stage in ("gathering", "encode", "kernel", "assume", "placing"):
            assert after[f"{stage}_count"] == after["bursts"], stage
        assert after["bind_sum"] == pytest.approx(after["bind_point_sum"])
        # The parts do not exceed the whole: each pod's wait in the queue and its burst's
        # encode, kernel and assume come before its POST; a burst's gathering lies within
        # the queue wait of the pods that were ready when it began.
        parts = sum(after[f"{stage}_sum"] for stage in ("queue_wait", "encode", "kernel", "assume"))
        assert 0 < parts <= after["whole_sum"]
        # Each pod waits in the queue, then for its burst to be placed, then for its POST
        # to go out: the three add up to no more than the whole (a burst's placing is
        # counted once, each of its pods waited all of it), and placing holds the
        # burst's encode, kernel and assume.
        waits = after["queue_wait_sum"] + after["placing_sum"] + after["bind_wait_sum"]
        assert 0 < waits <= after["whole_sum"]
        inside = sum(after[f"{stage}_sum"] for stage in ("encode", "kernel", "assume"))
        assert inside <= after["placing_sum"]
        assert after["gathering_sum"] <= after["queue_wait_sum"]
    finally:
        process.kill()
        delete_nodes(control_plane, nodes)
