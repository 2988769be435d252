"""The raw-bind contenders on the real control plane: kubesalvo's client, informers and
binder bind each of their pods exactly once, round robin over the schedulable nodes, leave
other schedulers' pods alone, and with events write one Scheduled event per pod, as
kube-scheduler and kubesalvo do."""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter

import msgspec
import pytest

from kubesalvo.sched.bench.rawbind import RawBinder
from kubesalvo.sched.binder import BindOutcome
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.events import EventRecorder, RecorderSettings
from kubesalvo.sched.informers import wait_synced
from tests.sched.test_app import kwok_node

pytestmark = pytest.mark.integration

NAME = "raw-bind-events"
PODS = 24


async def get_items(api: ApiClient, path: str) -> list[dict]:
    response = await api.request("GET", path)
    return msgspec.json.decode(response.body)["items"]


def pod(namespace: str, name: str, scheduler: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


async def test_each_pod_bound_once_round_robin_with_one_scheduled_event(
    control_plane, namespace, credentials, api, eventually
):
    pool = f"raw-{secrets.token_hex(3)}"
    cordoned = kwok_node(f"{pool}-cordoned", pool)
    cordoned["spec"] = {"unschedulable": True}
    tainted = kwok_node(f"{pool}-tainted", pool)
    tainted["spec"] = {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}
    ours = [kwok_node(f"{pool}-{i}", pool) for i in range(2)]
    control_plane.create([cordoned, tainted, *ours])
    try:
        await _bind_and_check(
            control_plane, namespace, credentials, api, eventually, cordoned, tainted
        )
    finally:
        names = [n["metadata"]["name"] for n in (cordoned, tainted, *ours)]

        async def delete(client) -> None:
            # The pods first, and gone, so that no pod is left bound to a deleted node
            # (later tests check every placement in the cluster).
            pods = f"/api/v1/namespaces/{namespace}/pods"
            await client.request("DELETE", pods, params={"gracePeriodSeconds": "0"})
            for _ in range(240):
                if not (await client.request("GET", pods))["items"]:
                    break
                await asyncio.sleep(0.25)
            for name in names:
                await client.request("DELETE", f"/api/v1/nodes/{name}")

        control_plane.call(delete)


async def _bind_and_check(
    control_plane, namespace, credentials, api, eventually, cordoned, tainted
):
    async with ApiClient(credentials, qps=500, burst=500) as client:
        recorder = EventRecorder(client, RecorderSettings(component=NAME, qps=500, burst=500))
        recorder.start()
        raw = RawBinder(client, NAME, recorder)
        for informer in raw.informers:
            informer.start()
        try:
            await wait_synced(raw.informers, timeout=30)
            await eventually(lambda: raw.node_count >= 2, 30, "our two nodes seen")
            schedulable = raw.node_count
            control_plane.create(
                [pod(namespace, f"p-{i}", NAME) for i in range(PODS)]
                + [pod(namespace, "someone-elses", "another-scheduler")]
            )
            await eventually(lambda: raw.bound == PODS, 60, f"{PODS} binds")
            assert await recorder.flush(timeout=30), "events still pending"
        finally:
            for informer in raw.informers:
                await informer.stop()
            await recorder.stop()
    assert raw.binder.counts[BindOutcome.BOUND] == PODS
    assert raw.binder.counts[BindOutcome.FAILED] == 0

    pods = {
        p["metadata"]["name"]: p
        for p in await get_items(api, f"/api/v1/namespaces/{namespace}/pods")
    }
    assert "nodeName" not in pods.pop("someone-elses")["spec"]
    nodes = Counter(p["spec"]["nodeName"] for p in pods.values())
    assert sum(nodes.values()) == PODS
    assert not {cordoned["metadata"]["name"], tainted["metadata"]["name"]} & set(nodes)
    # Round robin: no node gets two pods more than another that got any.
    assert max(nodes.values()) - min(nodes.values()) <= 1
    assert len(nodes) == min(PODS, schedulable)

    events = await get_items(api, f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
    scheduled = [e for e in events if e["reason"] == "Scheduled"]
    assert sorted(e["regarding"]["name"] for e in scheduled) == sorted(pods)
    for event in scheduled:
        name = event["regarding"]["name"]
        node = pods[name]["spec"]["nodeName"]
        assert event["note"] == f"Successfully assigned {namespace}/{name} to {node}"
        assert event["reportingController"] == NAME and event["type"] == "Normal"
        assert event["regarding"]["uid"] == pods[name]["metadata"]["uid"]
