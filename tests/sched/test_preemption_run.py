"""Preemption by ``kubesalvo run`` against the real control plane.

Two small kwok nodes of their own pool are filled by low-priority pods; a pod of high
priority that fits only if one of them leaves makes the scheduler evict one (the victim is
deleted and gets a ``Preempted`` event), is nominated to the victim's node and ends bound
there. A pod of the same priority with ``preemptionPolicy: Never`` evicts nothing and is
reported with DefaultPreemption's "not eligible" text. Everything is read back from the
API server (and the scheduler's log for the nomination, which binding may overtake).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from kubesalvo.core.preemption import NOT_ELIGIBLE_NEVER
from tests.helpers.objects import priority_class
from tests.sched import test_app
from tests.sched.test_app import delete_pods, kwok_node, list_objects, pod_scheduled, settled

pytestmark = pytest.mark.integration

# ``kubesalvo run`` in a subprocess, as test_app starts it.
scheduler = test_app.scheduler

NODES = 2
LOW_PER_NODE = 2


def _pod(namespace: str, name: str, pool: str, priority_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": {
            "schedulerName": "kubesalvo",
            "priorityClassName": priority_class,
            "nodeSelector": {"kubesalvo.io/test-pool": pool},
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "1", "memory": "100Mi"}},
                }
            ],
        },
    }


def _get(control_plane: Any, namespace: str, name: str) -> dict[str, Any] | None:
    pods = list_objects(control_plane, f"/api/v1/namespaces/{namespace}/pods")
    return next((p for p in pods if p["metadata"]["name"] == name), None)


def _nominations(log_text: str, pod: str) -> list[str]:
    """The nodes the scheduler's log says ``pod`` (namespace/name) was nominated to."""
    found = []
    for line in log_text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("msg", "") if isinstance(entry, dict) else ""
        prefix = f"preemption: {pod} nominated to "
        if message.startswith(prefix):
            found.append(message[len(prefix) :].split(",")[0])
    return found


def test_a_high_priority_pod_evicts_one_low_priority_pod_and_binds_where_it_was_nominated(
    control_plane, scheduler, namespace
):
    token = secrets.token_hex(3)
    pool = f"preempt-{token}"
    low, high, never = f"low-{token}", f"high-{token}", f"never-{token}"
    node_names = [f"{pool}-{i}" for i in range(NODES)]
    control_plane.create(
        [
            priority_class(low, 100),
            priority_class(high, 10_000),
            priority_class(never, 10_000, "Never"),
        ]
    )
    control_plane.create([kwok_node(name, pool, cpu="2", memory="8Gi") for name in node_names])
    process = scheduler()
    lows = [_pod(namespace, f"low-{i}", pool, low) for i in range(NODES * LOW_PER_NODE)]
    created: list[dict[str, Any]] = list(lows)
    try:
        control_plane.create(lows)

        def lows_bound() -> bool:
            pods = list_objects(control_plane, f"/api/v1/namespaces/{namespace}/pods")
            return sum(1 for p in pods if p["spec"].get("nodeName")) == len(lows)

        settled(process, 120, lows_bound)
        total_nodes = len(list_objects(control_plane, "/api/v1/nodes"))

        # preemptionPolicy Never: reported with the post-filter text, nothing evicted.
        waiter = _pod(namespace, "never", pool, never)
        created.append(waiter)
        control_plane.create([waiter])

        def never_reported() -> bool:
            pod = _get(control_plane, namespace, "never")
            condition = pod_scheduled(pod) if pod else None
            return condition is not None and condition.get("status") == "False"

        settled(process, 120, never_reported)
        pod = _get(control_plane, namespace, "never")
        assert pod is not None and not pod["spec"].get("nodeName")
        assert not pod.get("status", {}).get("nominatedNodeName")
        condition = pod_scheduled(pod)
        assert condition is not None and condition["reason"] == "Unschedulable"
        assert condition["message"].startswith(f"0/{total_nodes} nodes are available: ")
        assert f"{NODES} Insufficient cpu" in condition["message"]
        # DynamicResources' PostFilter runs first in the default profile.
        assert condition["message"].endswith(
            f". no new claims to deallocate, preemption: {NOT_ELIGIBLE_NEVER}"
        )
        listed = list_objects(control_plane, f"/api/v1/namespaces/{namespace}/pods")
        assert sum(1 for p in listed if p["metadata"]["name"].startswith("low-")) == len(lows)
        # Gone before the preemptor comes: of equal priority, it could take the freed room
        # (the kernel does not hold a nominated pod's room for it).
        delete_pods(control_plane, [waiter])

        preemptor = _pod(namespace, "high", pool, high)
        created.append(preemptor)
        control_plane.create([preemptor])

        def high_bound() -> bool:
            pod = _get(control_plane, namespace, "high")
            return pod is not None and bool(pod["spec"].get("nodeName"))

        settled(process, 180, high_bound)
        pod = _get(control_plane, namespace, "high")
        assert pod is not None
        bound_to = pod["spec"]["nodeName"]
        assert bound_to in node_names
        nominated = _nominations(process.log.read_text(errors="replace"), f"{namespace}/high")
        assert nominated and nominated[-1] == bound_to
        assert pod.get("status", {}).get("nominatedNodeName", bound_to) == bound_to

        listed = list_objects(control_plane, f"/api/v1/namespaces/{namespace}/pods")
        remaining = [p for p in listed if p["metadata"]["name"].startswith("low-")]
        victims = {p["metadata"]["name"] for p in lows} - {p["metadata"]["name"] for p in remaining}
        assert len(victims) == 1
        events = list_objects(
            control_plane, f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        )
        preempted = [e for e in events if e["reason"] == "Preempted"]
        assert {e["regarding"]["name"] for e in preempted} == victims
        event = preempted[0]
        assert event["type"] == "Normal"
        assert event["note"] == f"Preempted by pod {pod['metadata']['uid']} on node {bound_to}"
        assert event["related"]["name"] == "high"
        # The node holds exactly its room: the preemptor and the low pods left on it.
        on_node = [p["metadata"]["name"] for p in listed if p["spec"].get("nodeName") == bound_to]
        assert "high" in on_node and len(on_node) == LOW_PER_NODE
        # Both pods went through DefaultPreemption; one chose a node, with one victim.
        assert process.metric("scheduler_preemption_attempts_total") >= 2
        assert process.metric("scheduler_preemption_victims_count") >= 1
        assert process.metric("scheduler_preemption_victims_sum") >= 1
    finally:
        process.kill()
        delete_pods(control_plane, created)

        async def cleanup(client: Any) -> None:
            for name in node_names:
                await client.request("DELETE", f"/api/v1/nodes/{name}")
            for name in (low, high, never):
                await client.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")

        control_plane.call(cleanup)
