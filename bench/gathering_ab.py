"""Indicative figures of the gathering window (issue 33), against a running local control
plane (``kubesalvo cluster up --dir DIR``): run from the worktree's root as
``PYTHONPATH=. python3 bench/gathering_ab.py lone|surge DIR OUT LABEL``.

``lone``: 30 pods created one at a time, 0.5 s apart, onto an idle ``kubesalvo run``
(10ms window); each pod's creation POST sent -> nodeName seen (a GET every 5 ms), and the
scheduler's own means (creation event -> bind POST; queue -> bound, the SLI histogram).
``surge``: 500 pods created at once (64 POSTs in flight); the bursts they were placed in,
and the same means. The scheduler is tests/sched/test_app.py's ``SchedulerProcess``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kubesalvo.sched.cluster.controlplane import ControlPlane
from tests.sched.test_app import CONFIG, SchedulerProcess, list_objects, settled

LONE, SURGE = 30, 500


def pod(namespace: str, i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p{i}", "namespace": namespace},
        "spec": {
            "schedulerName": "kubesalvo",
            "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "10m"}}}
            ],
        },
    }


def mean_ms(process: SchedulerProcess, name: str, **labels: str) -> float:
    count = process.metric(f"{name}_count", **labels)
    return round(process.metric(f"{name}_sum", **labels) / max(1.0, count) * 1000, 1)


def lone(cp: ControlPlane, namespace: str, process: SchedulerProcess) -> dict[str, Any]:
    async def one(client: Any, i: int) -> float:
        began = time.perf_counter()
        await client.request("POST", f"/api/v1/namespaces/{namespace}/pods", body=pod(namespace, i))
        while True:
            got = await client.request("GET", f"/api/v1/namespaces/{namespace}/pods/p{i}")
            if got["spec"].get("nodeName"):
                return time.perf_counter() - began
            await asyncio.sleep(0.005)

    seen = []
    for i in range(LONE):
        seen.append(cp.call(lambda client, i=i: one(client, i)))
        time.sleep(0.5)
    seen.sort()
    return {
        "seen_p50_ms": round(statistics.median(seen) * 1000, 1),
        "seen_p90_ms": round(seen[int(0.9 * LONE) - 1] * 1000, 1),
    }


def surge(cp: ControlPlane, namespace: str, process: SchedulerProcess) -> dict[str, Any]:
    def bound() -> int:
        listed = list_objects(cp, f"/api/v1/namespaces/{namespace}/pods")
        return sum(1 for p in listed if p["spec"].get("nodeName"))

    began = time.monotonic()
    cp.create([pod(namespace, i) for i in range(SURGE)])
    created = time.monotonic() - began
    settled(process, 240, lambda: bound() == SURGE)
    bursts = process.metric("kubesalvo_burst_size_count")
    return {"created_s": round(created, 2), "bursts": bursts}


def main() -> None:
    mode, folder, out, label = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    cp = ControlPlane.load(folder)
    out.mkdir(parents=True, exist_ok=True)
    config = CONFIG.format(max_burst=1000).replace("20ms", "10ms")
    process = SchedulerProcess(out, cp.kubeconfig, config, label)
    namespace = f"{mode}-{secrets.token_hex(3)}"
    cp.create([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}])
    try:
        process.wait_ready()
        settled(process, 60, lambda: True)
        time.sleep(1)
        figures = (lone if mode == "lone" else surge)(cp, namespace, process)
        figures |= {
            "label": label,
            "event_to_bind_post_mean_ms": mean_ms(process, "kubesalvo_pod_event_to_bind_seconds"),
            "sli_mean_ms": mean_ms(
                process, "scheduler_pod_scheduling_sli_duration_seconds", attempts="1"
            ),
        }
        print(json.dumps(figures))
    finally:
        process.kill()

        async def delete(client: Any) -> None:
            await client.request("DELETE", f"/api/v1/namespaces/{namespace}")

        cp.call(delete)


if __name__ == "__main__":
    main()
