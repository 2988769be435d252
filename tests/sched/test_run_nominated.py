"""Rooms of nominated pods on the real control plane.

A pending pod with ``status.nominatedNodeName`` keeps its room on that node against pods
of lower or equal priority, while a pod of higher priority may take it (kube-scheduler's
nominated pods). First the burst cycle on its own, with the nomination written on the API
server and the nominated pod held back in the queue (so that no burst places it before
the others come); then ``kubesalvo run`` end to end: a high-priority pod preempts, a
lower-priority pod created right after does not take the freed room, and the preemptor
ends up bound to its nominated node.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from kubesalvo.sched.client import ApiClient, ApiError
from kubesalvo.sched.config import default_config
from kubesalvo.sched.cycle import BurstCycle, CycleSettings
from kubesalvo.sched.informers import to_api_dict
from kubesalvo.sched.informers.models import Pod
from kubesalvo.sched.queue import QueueName, SchedulingQueue
from tests.helpers.objects import priority_class
from tests.sched import test_app
from tests.sched.cycle.test_burst import (
    TAINT_KEY,
    cpu_request,
    fed_cache,
    get_pod,
    own_node,
    toleration,
)
from tests.sched.test_app import delete_pods, list_objects, pod_scheduled, settled

pytestmark = pytest.mark.integration

scheduler = test_app.scheduler


@pytest.fixture
async def classes(api: ApiClient) -> AsyncIterator[dict[str, str]]:
    """PriorityClasses top (100000), nominated (1000), low (10), named for this test."""
    token = secrets.token_hex(3)
    values = {"top": 100_000, "nominated": 1000, "low": 10}
    made = {role: f"{role}-{token}" for role in values}
    for role, value in values.items():
        body = msgspec.json.encode(priority_class(made[role], value))
        await api.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body=body)
    try:
        yield made
    finally:
        for name in made.values():
            await api.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


@pytest.fixture
async def node(api: ApiClient) -> AsyncIterator[dict[str, Any]]:
    """One 2-cpu node of this test's own (tainted: no other test's pods land there)."""
    created = own_node(f"nominated-{secrets.token_hex(3)}", "nominated", "2")
    created["metadata"]["labels"]["kubesalvo.io/test"] = created["metadata"]["name"]
    created["spec"]["taints"][0]["value"] = created["metadata"]["name"]
    await api.request("POST", "/api/v1/nodes", body=msgspec.json.encode(created))
    try:
        yield created
    finally:
        try:
            await api.request("DELETE", f"/api/v1/nodes/{created['metadata']['name']}")
        except ApiError as error:
            if error.status != 404:
                raise


async def test_a_nominated_pods_room_is_kept_from_lower_priority_and_given_to_higher(
    api, node, classes, namespace, create_pod
):
    name = node["metadata"]["name"]
    tolerate = toleration(name)
    config = default_config()
    cache = await fed_cache(api, name)
    queue = SchedulingQueue.from_config(config)
    cycle = BurstCycle(config, cache, queue, api, settings=CycleSettings(gathering_window=0))
    # One of the two cpus is taken by a bound pod; the other is the nominated pod's room.
    filler = await create_pod(
        namespace,
        "filler",
        nodeName=name,
        tolerations=tolerate,
        containers=cpu_request("1"),
        priorityClassName=classes["low"],
    )
    cache.bound_pod(to_api_dict(msgspec.convert(filler, Pod)))
    nominated = await create_pod(
        namespace,
        "nominated",
        tolerations=tolerate,
        containers=cpu_request("1"),
        priorityClassName=classes["nominated"],
    )
    await api.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/nominated/status",
        body=msgspec.json.encode({"status": {"nominatedNodeName": name}}),
        content_type="application/strategic-merge-patch+json",
    )
    nominated = await get_pod(api, namespace, "nominated")
    assert nominated["status"]["nominatedNodeName"] == name
    # Held back: parked as unschedulable, so that the bursts below do not hold it.
    queue.add(msgspec.convert(nominated, Pod))
    (held,) = queue.pop_burst(10)
    queue.add_unschedulable(held, ["NodeResourcesFit"])
    assert queue.where(held.key) is QueueName.UNSCHEDULABLE

    for role in ("low", "nominated"):  # lower, then equal priority: both leave the room
        pod = await create_pod(
            namespace,
            f"{role}-pod",
            tolerations=tolerate,
            containers=cpu_request("1"),
            priorityClassName=classes[role],
        )
        queue.add(msgspec.convert(pod, Pod))
        await cycle.schedule(queue.pop_burst(10))
        attempt = cycle.attempts[f"{namespace}/{role}-pod"]
        assert attempt.node is None
        assert attempt.reason_counts == {"Insufficient cpu": 1}
    # The reservation left nothing behind in the state.
    assert set(cache.state.pods) == {filler["metadata"]["uid"]}

    top = await create_pod(
        namespace,
        "top",
        tolerations=tolerate,
        containers=cpu_request("1"),
        priorityClassName=classes["top"],
    )
    queue.add(msgspec.convert(top, Pod))
    await cycle.schedule(queue.pop_burst(10))
    assert cycle.attempts[f"{namespace}/top"].node == name
    deadline = asyncio.get_running_loop().time() + 20
    while not (await get_pod(api, namespace, "top"))["spec"].get("nodeName"):
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.1)
    assert (await get_pod(api, namespace, "top"))["spec"]["nodeName"] == name
    await cycle.stop()
    for pod_name in ("filler", "nominated", "low-pod", "nominated-pod", "top"):
        path = f"/api/v1/namespaces/{namespace}/pods/{pod_name}"
        await api.request("DELETE", path, params={"gracePeriodSeconds": "0"})


def _pod(namespace: str, name: str, pool: str, priority_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": "kubesalvo",
            "priorityClassName": priority_class,
            "nodeSelector": {"kubesalvo.io/test-pool": pool},
            "tolerations": toleration(pool),
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "1", "memory": "100Mi"}},
                }
            ],
        },
    }


def test_a_preemptors_freed_room_is_not_taken_by_a_lower_priority_pod_created_right_after(
    control_plane, scheduler, namespace
):
    token = secrets.token_hex(3)
    pool = f"nominated-{token}"
    node_name = f"{pool}-0"
    low, mid, high = f"low-{token}", f"mid-{token}", f"high-{token}"
    control_plane.create(
        [
            priority_class(low, 100),
            # Never: it must wait for room, not make its own by preempting.
            priority_class(mid, 1000, "Never"),
            priority_class(high, 10_000),
        ]
    )
    control_plane.create(
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": node_name,
                    "labels": {
                        "kubernetes.io/hostname": node_name,
                        "kubesalvo.io/test-pool": pool,
                    },
                    "annotations": {"kwok.x-k8s.io/node": "fake"},
                },
                # Tainted: pending pods of other tests (any schedulerName kubesalvo) stay off.
                "spec": {"taints": [{"key": TAINT_KEY, "value": pool, "effect": "NoSchedule"}]},
                "status": {
                    "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                    "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                },
            }
        ]
    )
    process = scheduler()
    lows = [_pod(namespace, f"low-{i}", pool, low) for i in range(2)]
    created: list[dict[str, Any]] = list(lows)
    pods_path = f"/api/v1/namespaces/{namespace}/pods"

    def named(name: str) -> dict[str, Any] | None:
        return next(
            (p for p in list_objects(control_plane, pods_path) if p["metadata"]["name"] == name),
            None,
        )

    try:
        control_plane.create(lows)
        settled(
            process,
            120,
            lambda: all(p["spec"].get("nodeName") for p in list_objects(control_plane, pods_path)),
        )
        preemptor = _pod(namespace, "high", pool, high)
        waiter = _pod(namespace, "mid", pool, mid)
        created += [preemptor, waiter]
        control_plane.create([preemptor])

        def nominated_or_bound() -> bool:
            pod = named("high")
            return pod is not None and bool(
                pod.get("status", {}).get("nominatedNodeName") or pod["spec"].get("nodeName")
            )

        test_app.settled(process, 120, nominated_or_bound)
        control_plane.create([waiter])

        def high_bound_and_mid_reported() -> bool:
            high_pod, mid_pod = named("high"), named("mid")
            condition = pod_scheduled(mid_pod) if mid_pod else None
            return (
                high_pod is not None
                and bool(high_pod["spec"].get("nodeName"))
                and condition is not None
                and condition.get("status") == "False"
            )

        settled(process, 180, high_bound_and_mid_reported)
        high_pod, mid_pod = named("high"), named("mid")
        assert high_pod is not None and mid_pod is not None
        assert high_pod["spec"]["nodeName"] == node_name
        assert high_pod.get("status", {}).get("nominatedNodeName", node_name) == node_name
        assert not mid_pod["spec"].get("nodeName")
        condition = pod_scheduled(mid_pod)
        assert condition is not None and condition["reason"] == "Unschedulable"
        assert "1 Insufficient cpu" in condition["message"]
        remaining = [
            p
            for p in list_objects(control_plane, pods_path)
            if p["metadata"]["name"].startswith("low-") and p["spec"].get("nodeName")
        ]
        assert len(remaining) == 1  # one victim, and its room went to the preemptor
        assert process.debug("/debug/queue")["preemptionsPending"] == 0
    finally:
        process.kill()
        delete_pods(control_plane, created)

        async def cleanup(client: Any) -> None:
            await client.request("DELETE", f"/api/v1/nodes/{node_name}")
            for name in (low, mid, high):
                await client.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")

        control_plane.call(cleanup)
