"""Preemption against the real API server: a node filled with low-priority pods, a
high-priority pod pinned to it; the decision (core/preemption.py) is written by
sched/preemption.py: the victim deleted with a UID precondition and marked
DisruptionTarget, the Preempted event, nominatedNodeName set, stale nominations cleared."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec
import pytest

from kubesalvo.core.preemption import preempt
from kubesalvo.sched.client import ApiClient, ApiError
from kubesalvo.sched.cluster.nodes import add_nodes
from kubesalvo.sched.events import EventRecorder, RecorderSettings
from kubesalvo.sched.preemption import disruption_message, execute, preempt_pod

pytestmark = pytest.mark.integration

SCHEDULER = "preemption-test"  # no scheduler serves it: only the test places pods


@pytest.fixture
def tag() -> str:
    return secrets.token_hex(3)


@pytest.fixture
def node_name(control_plane, tag) -> Iterator[str]:
    """A 4-cpu node of its own, tainted so that nothing else is scheduled onto it."""
    name = f"preempt-{tag}"
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": [{"key": "kubesalvo.io/preemption-test", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        },
    }
    control_plane.call(lambda client: add_nodes(client, [body], timeout=60))
    yield name

    async def delete(client) -> None:
        await client.request("DELETE", f"/api/v1/nodes/{name}")

    control_plane.call(delete)


@pytest.fixture
def priorities(control_plane, tag) -> dict[str, str]:
    """PriorityClasses lowest (100), low (200), high (1000), named per test."""
    values = {"lowest": 100, "low": 200, "high": 1000}
    control_plane.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"{level}-{tag}"},
            "value": value,
        }
        for level, value in values.items()
    )
    return {level: f"{level}-{tag}" for level in values}


@pytest.fixture
async def recorder(api) -> AsyncIterator[EventRecorder]:
    events = EventRecorder(api, RecorderSettings(qps=500, burst=500))
    events.start()
    try:
        yield events
    finally:
        await events.stop()


async def make_pod(
    api: ApiClient,
    namespace: str,
    name: str,
    priority_class: str,
    cpu: str,
    node: str,
    *,
    bound: bool,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": SCHEDULER,
        "priorityClassName": priority_class,
        "tolerations": [{"key": "kubesalvo.io/preemption-test", "operator": "Exists"}],
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu}},
            }
        ],
    }
    if bound:
        spec["nodeName"] = node
    else:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
        "spec": spec,
    }
    response = await api.request(
        "POST", f"/api/v1/namespaces/{namespace}/pods", body=msgspec.json.encode(body)
    )
    created: dict[str, Any] = msgspec.json.decode(response.body)
    return created


async def get(api: ApiClient, path: str) -> dict[str, Any]:
    response = await api.request("GET", path)
    decoded: dict[str, Any] = msgspec.json.decode(response.body)
    return decoded


async def get_pod(api: ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return await get(api, f"/api/v1/namespaces/{namespace}/pods/{name}")
    except ApiError as error:
        if error.status == 404:
            return None
        raise


async def wait_gone(api: ApiClient, namespace: str, name: str, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await get_pod(api, namespace, name) is None:
            return True
        await asyncio.sleep(0.2)
    return False


async def nominate(api: ApiClient, namespace: str, name: str, node: str) -> None:
    await api.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/{name}/status",
        body=msgspec.json.encode({"status": {"nominatedNodeName": node}}),
        content_type="application/merge-patch+json",
    )


async def cluster(api: ApiClient) -> tuple[list[dict], list[dict], list[dict]]:
    nodes = (await get(api, "/api/v1/nodes"))["items"]
    pods = (await get(api, "/api/v1/pods"))["items"]
    pdbs = (await get(api, "/apis/policy/v1/poddisruptionbudgets"))["items"]
    return nodes, pods, pdbs


async def test_high_priority_pod_evicts_the_least_important_pod_and_is_nominated(
    api, namespace, node_name, priorities, recorder
):
    await make_pod(api, namespace, "lowest", priorities["lowest"], "1500m", node_name, bound=True)
    await make_pod(api, namespace, "low", priorities["low"], "1500m", node_name, bound=True)
    high = await make_pod(
        api, namespace, "high", priorities["high"], "2500m", node_name, bound=False
    )
    nodes, pods, pdbs = await cluster(api)

    decision, outcome = await preempt_pod(
        api, recorder, high, nodes, pods, pdbs, None, scheduler_name="kubesalvo"
    )
    assert decision.node == node_name
    assert [v["metadata"]["name"] for v in decision.victims] == ["lowest"]
    assert outcome.error is None
    assert outcome.evicted == [f"{namespace}/lowest"] and outcome.already_gone == []
    assert outcome.nominated_node_name == node_name

    # The victim carries the DisruptionTarget condition while it terminates, then goes.
    victim = await get_pod(api, namespace, "lowest")
    if victim is not None:
        assert victim["metadata"].get("deletionTimestamp")
        (condition,) = [
            c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget"
        ]
        assert condition["reason"] == "PreemptionByScheduler"
        assert condition["message"] == disruption_message("kubesalvo")
    assert await get_pod(api, namespace, "low") is not None
    stored = await get_pod(api, namespace, "high")
    assert stored is not None and stored["status"]["nominatedNodeName"] == node_name

    assert await recorder.flush(timeout=20)
    events = (await get(api, f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"))["items"]
    (event,) = [e for e in events if e["reason"] == "Preempted"]
    assert event["note"] == f"Preempted by pod {high['metadata']['uid']} on node {node_name}"
    assert event["regarding"]["name"] == "lowest" and event["related"]["name"] == "high"
    assert event["type"] == "Normal" and event["action"] == "Preempting"

    # kwok's pod-delete stage finishes the graceful deletion of a pod on a fake node.
    assert await wait_gone(api, namespace, "lowest"), "the victim was not deleted"


async def test_a_replaced_victim_is_left_alone(api, namespace, node_name, priorities, recorder):
    await make_pod(api, namespace, "lowest", priorities["lowest"], "3", node_name, bound=True)
    high = await make_pod(api, namespace, "high", priorities["high"], "3", node_name, bound=False)
    nodes, pods, pdbs = await cluster(api)
    decision = preempt(high, nodes, pods, pdbs)
    assert [v["metadata"]["name"] for v in decision.victims] == ["lowest"]
    # The decision names the pod by its UID: a pod of the same name with another UID (as
    # after a re-creation) must not be touched.
    stale = dict(decision.victims[0])
    stale["metadata"] = {**stale["metadata"], "uid": "00000000-0000-0000-0000-000000000000"}
    decision.victims = [stale]
    outcome = await execute(api, recorder, high, decision, scheduler_name="kubesalvo")
    assert outcome.error is None
    assert outcome.evicted == [] and outcome.already_gone == [f"{namespace}/lowest"]
    survivor = await get_pod(api, namespace, "lowest")
    assert survivor is not None and not survivor["metadata"].get("deletionTimestamp")
    assert await recorder.flush(timeout=20)
    events = (await get(api, f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"))["items"]
    assert [e for e in events if e["reason"] == "Preempted"] == []


async def test_lower_priority_nominations_on_the_node_are_cleared(
    api, namespace, node_name, priorities, recorder
):
    await make_pod(api, namespace, "lowest", priorities["lowest"], "3", node_name, bound=True)
    await make_pod(api, namespace, "waiting", priorities["low"], "1", node_name, bound=False)
    await nominate(api, namespace, "waiting", node_name)
    high = await make_pod(api, namespace, "high", priorities["high"], "3", node_name, bound=False)
    nodes, pods, pdbs = await cluster(api)
    decision = preempt(high, nodes, pods, pdbs)
    assert decision.node == node_name
    assert [p["metadata"]["name"] for p in decision.clear_nominated] == ["waiting"]
    outcome = await execute(api, recorder, high, decision, scheduler_name="kubesalvo")
    assert outcome.error is None and outcome.cleared == [f"{namespace}/waiting"]
    waiting = await get_pod(api, namespace, "waiting")
    assert waiting is not None and not waiting["status"].get("nominatedNodeName")


async def test_a_stale_nomination_is_cleared_when_preemption_cannot_help(
    api, namespace, node_name, priorities, recorder
):
    await make_pod(api, namespace, "peer", priorities["high"], "3", node_name, bound=True)
    high = await make_pod(api, namespace, "high", priorities["high"], "2", node_name, bound=False)
    await nominate(api, namespace, "high", node_name)
    nodes, pods, pdbs = await cluster(api)
    (high,) = [p for p in pods if p["metadata"]["uid"] == high["metadata"]["uid"]]
    decision = preempt(high, nodes, pods, pdbs)
    assert decision.node is None and decision.nominated_node_name == ""
    assert decision.message.startswith("preemption: 0/")
    assert "1 No preemption victims found for incoming pod" in decision.message
    outcome = await execute(api, recorder, high, decision, scheduler_name="kubesalvo")
    assert outcome.error is None and outcome.nominated_node_name == ""
    stored = await get_pod(api, namespace, "high")
    assert stored is not None and not stored["status"].get("nominatedNodeName")


async def test_a_pod_guarded_by_a_disruption_budget_is_spared(
    api, control_plane, namespace, node_name, priorities, recorder
):
    control_plane.create(
        [
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "guard", "namespace": namespace},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
            }
        ]
    )
    await make_pod(api, namespace, "guarded", priorities["lowest"], "2", node_name, bound=True)
    await make_pod(api, namespace, "free", priorities["low"], "2", node_name, bound=True)
    high = await make_pod(api, namespace, "high", priorities["high"], "2", node_name, bound=False)
    nodes, pods, pdbs = await cluster(api)
    assert any(p["metadata"]["namespace"] == namespace for p in pdbs)
    decision, outcome = await preempt_pod(
        api, recorder, high, nodes, pods, pdbs, None, scheduler_name="kubesalvo"
    )
    # Without the budget the lowest-priority pod would go; with it the other one goes.
    assert [v["metadata"]["name"] for v in decision.victims] == ["free"]
    assert decision.pdb_violations == 0
    assert outcome.evicted == [f"{namespace}/free"]
    assert await get_pod(api, namespace, "guarded") is not None
