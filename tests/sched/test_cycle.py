"""The burst cycle on the real API server: a burst is placed by the kernel and bound, the
pods that fit nowhere get kube-scheduler's FailedScheduling event and PodScheduled=False
condition and wait in the queue, a replica that does not lead never binds, and one that
loses the lease stops its binds in flight at once."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.client import ApiClient, ApiError
from kubesalvo.sched.config import default_config
from kubesalvo.sched.cycle import BurstCycle, CycleSettings
from kubesalvo.sched.events import EventRecorder
from kubesalvo.sched.informers import to_api_dict
from kubesalvo.sched.informers.models import Node, Pod
from kubesalvo.sched.metrics import SchedulerMetrics
from kubesalvo.sched.queue import QueueName, SchedulingQueue

TAINT_KEY = "kubesalvo.io/test"


def own_node(name: str, group: str, cpu: str) -> dict[str, Any]:
    """A kwok node that only pods tolerating the group's taint can use."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, TAINT_KEY: group},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {"taints": [{"key": TAINT_KEY, "value": group, "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
        },
    }


@pytest.fixture
async def nodes(api: ApiClient) -> AsyncIterator[list[dict[str, Any]]]:
    """Two 2-cpu nodes of this test's own (tainted, so no other test's pods land there)."""
    group = f"cycle-{secrets.token_hex(3)}"
    created = [own_node(f"{group}-{i}", group, "2") for i in range(2)]
    for node in created:
        await api.request("POST", "/api/v1/nodes", body=msgspec.json.encode(node))
    try:
        yield created
    finally:
        for node in created:
            try:
                await api.request("DELETE", f"/api/v1/nodes/{node['metadata']['name']}")
            except ApiError as error:
                if error.status != 404:
                    raise


def toleration(group: str) -> list[dict[str, str]]:
    return [{"key": TAINT_KEY, "operator": "Equal", "value": group, "effect": "NoSchedule"}]


def cpu_request(cpu: str) -> list[dict[str, Any]]:
    return [
        {
            "name": "c",
            "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": cpu}},
        }
    ]


async def fed_cache(api: ApiClient, group: str) -> SchedulerCache:
    """A cache holding exactly this test's nodes, read back from the API server."""
    body = (
        await api.request("GET", "/api/v1/nodes", params={"labelSelector": f"{TAINT_KEY}={group}"})
    ).body
    cache = SchedulerCache()
    for item in msgspec.json.decode(body)["items"]:
        cache.add_node(to_api_dict(msgspec.convert(item, Node)))
    return cache


async def get_pod(api: ApiClient, namespace: str, name: str) -> dict[str, Any]:
    body = (await api.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")).body
    pod: dict[str, Any] = msgspec.json.decode(body)
    return pod


async def events_of(api: ApiClient, namespace: str) -> list[dict[str, Any]]:
    path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    items: list[dict[str, Any]] = msgspec.json.decode((await api.request("GET", path)).body)[
        "items"
    ]
    return items


async def test_a_burst_is_bound_and_the_pod_that_fits_nowhere_is_reported(
    api, nodes, namespace, create_pod, eventually
):
    group = nodes[0]["metadata"]["labels"][TAINT_KEY]
    config = default_config()
    cache = await fed_cache(api, group)
    queue = SchedulingQueue.from_config(config)
    recorder = EventRecorder(api)
    recorder.start()
    metrics = SchedulerMetrics()
    cycle = BurstCycle(
        config,
        cache,
        queue,
        api,
        recorder=recorder,
        metrics=metrics,
        settings=CycleSettings(max_burst_pods=100, gathering_window=0.05),
    )
    # Six 600m pods fill both 2-cpu nodes (three each); the seventh fits nowhere.
    created = []
    for i in range(7):
        created.append(
            await create_pod(
                namespace, f"p{i}", tolerations=toleration(group), containers=cpu_request("600m")
            )
        )
    for pod in created:
        queue.add(msgspec.convert(pod, Pod))
    cycle.start()

    bound: dict[str, str] = {}

    async def poll() -> None:
        for i in range(7):
            pod = await get_pod(api, namespace, f"p{i}")
            if pod["spec"].get("nodeName"):
                bound[f"p{i}"] = pod["spec"]["nodeName"]

    async def settled() -> bool:
        await poll()
        return len(bound) == 6 and cycle.binds_in_flight == 0

    deadline = asyncio.get_running_loop().time() + 30
    while not await settled():
        assert asyncio.get_running_loop().time() < deadline, f"bound so far: {bound}"
        await asyncio.sleep(0.1)
    names = {n["metadata"]["name"] for n in nodes}
    assert set(bound.values()) == names
    for node in names:
        assert sum(1 for v in bound.values() if v == node) == 3  # 3 x 600m <= 2 cpu
    (unbound,) = {f"p{i}" for i in range(7)} - set(bound)

    # DynamicResources' PostFilter answers (the cycle has no cluster view: no preemption).
    message = "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate"
    assert cycle.attempts[f"{namespace}/{unbound}"].message == message
    assert cycle.attempts[f"{namespace}/{unbound}"].reason_counts == {"Insufficient cpu": 2}
    unbound_uid = next(p["metadata"]["uid"] for p in created if p["metadata"]["name"] == unbound)
    assert queue.where(unbound_uid) in (
        QueueName.UNSCHEDULABLE,
        QueueName.BACKOFF,
        QueueName.IN_FLIGHT,
    )
    await recorder.flush(10)

    async def reported() -> bool:
        pod = await get_pod(api, namespace, unbound)
        conditions = {c["type"]: c for c in pod["status"].get("conditions", [])}
        return conditions.get("PodScheduled", {}).get("status") == "False"

    while not await reported():
        assert asyncio.get_running_loop().time() < deadline + 10
        await asyncio.sleep(0.1)
    pod = await get_pod(api, namespace, unbound)
    condition = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == message
    events = await events_of(api, namespace)
    failed = [e for e in events if e["reason"] == "FailedScheduling"]
    assert [e["regarding"]["name"] for e in failed] == [unbound]
    assert failed[0]["note"] == message and failed[0]["type"] == "Warning"
    scheduled = {e["regarding"]["name"]: e["note"] for e in events if e["reason"] == "Scheduled"}
    assert scheduled == {
        name: f"Successfully assigned {namespace}/{name} to {node}" for name, node in bound.items()
    }
    text = metrics.render().decode()
    assert 'scheduler_schedule_attempts_total{profile="kubesalvo",result="scheduled"} 6.0' in text
    await cycle.stop()
    await recorder.stop()


async def test_a_replica_that_does_not_lead_never_binds_until_it_leads(
    api, nodes, namespace, create_pod
):
    group = nodes[0]["metadata"]["labels"][TAINT_KEY]
    config = default_config()
    cache = await fed_cache(api, group)
    queue = SchedulingQueue.from_config(config)
    leading = False
    cycle = BurstCycle(
        config,
        cache,
        queue,
        api,
        is_leader=lambda: leading,
        settings=CycleSettings(gathering_window=0.0),
    )
    pod = await create_pod(namespace, "standby", tolerations=toleration(group))
    queue.add(msgspec.convert(pod, Pod))
    cycle.start()
    await asyncio.sleep(1.0)
    assert not (await get_pod(api, namespace, "standby"))["spec"].get("nodeName")
    assert cycle.bursts == 0

    leading = True
    cycle.leadership_changed(True)
    deadline = asyncio.get_running_loop().time() + 20
    while not (await get_pod(api, namespace, "standby"))["spec"].get("nodeName"):
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.1)
    await cycle.stop()


async def test_losing_the_lease_stops_the_binds_in_flight_at_once(
    api, proxy, proxied_api, nodes, namespace, create_pod
):
    group = nodes[0]["metadata"]["labels"][TAINT_KEY]
    config = default_config()
    cache = await fed_cache(api, group)
    queue = SchedulingQueue.from_config(config)
    leading = True
    cycle = BurstCycle(
        config,
        cache,
        queue,
        proxied_api,
        is_leader=lambda: leading,
        settings=CycleSettings(gathering_window=0.05),
    )
    # Every bind is throttled for a minute: the binds stay in flight.
    proxy.faults.throttle, proxy.faults.retry_after = 1_000, 60
    for i in range(3):
        pod = await create_pod(namespace, f"p{i}", tolerations=toleration(group))
        queue.add(msgspec.convert(pod, Pod))
    cycle.start()
    deadline = asyncio.get_running_loop().time() + 20
    while cycle.binds_in_flight < 3:
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
    assert cache.assumed_count == 3

    leading = False
    cycle.leadership_changed(False)
    while cycle.binds_in_flight:
        # Cancelled at once, not after the minute of Retry-After.
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
    assert cache.assumed_count == 0
    assert cache.state.requested[:, 3].sum() == 0  # nothing counted on any node
    assert queue.pending_counts()["backoff"] == 3  # requeued for whoever leads next
    assert proxy.stats.binds_accepted == {}
    for i in range(3):
        assert not (await get_pod(api, namespace, f"p{i}"))["spec"].get("nodeName")
    await cycle.stop()
