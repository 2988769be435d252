"""The API client's connection pool on the real API server: a run of binds sent in bursts,
with a Scheduled event written for each, opens no more connections than the pool's width,
keeps them across bursts, and leaves watches to a pool of their own (issue 33)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from kubesalvo.sched.binder import Binder, BinderSettings, BindOutcome
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.events import EventRecorder, ObjectRef, RecorderSettings

WIDTH = 6
BURSTS = 3
BURST = 24


@pytest.mark.integration
async def test_binds_and_events_in_bursts_reuse_a_pool_no_wider_than_its_limit(
    credentials, namespace, create_pod, control_plane
):
    node = control_plane.add_nodes(1)[0]["metadata"]["name"]
    pods = [await create_pod(namespace, f"burst-{i}") for i in range(BURSTS * BURST)]
    async with ApiClient(credentials, qps=0, max_connections=WIDTH) as client:
        recorder = EventRecorder(client, RecorderSettings(component="pool-test", qps=0))
        recorder.start()
        binder = Binder(client, BinderSettings(max_in_flight=256))
        opened_after: list[int] = []
        for start in range(0, len(pods), BURST):
            burst = pods[start : start + BURST]
            tasks = [
                binder.bind(namespace, p["metadata"]["name"], p["metadata"]["uid"], node)
                for p in burst
            ]
            results = await asyncio.gather(*tasks)
            assert {r.outcome for r in results} == {BindOutcome.BOUND}
            for p in burst:
                ref = ObjectRef(namespace, p["metadata"]["name"], p["metadata"]["uid"])
                recorder.scheduled(ref, node, "pool-test")
            assert await recorder.flush(timeout=30.0)
            opened_after.append(client.connections_opened)
            await asyncio.sleep(0.5)
        await recorder.stop()

        # A burst of 24 binds (and 24 events) went through at most WIDTH connections...
        assert 1 <= opened_after[0] <= WIDTH
        # ...which the later bursts reused instead of opening new ones.
        assert opened_after[-1] == opened_after[0]

        listed = await client.request("GET", f"/api/v1/namespaces/{namespace}/pods")
        bound = [p["spec"].get("nodeName") for p in msgspec.json.decode(listed.body)["items"]]
        assert bound == [node] * len(pods)

        events = await client.request("GET", f"/api/v1/namespaces/{namespace}/events")
        reasons = [e["reason"] for e in msgspec.json.decode(events.body)["items"]]
        assert reasons.count("Scheduled") == len(pods)


@pytest.mark.integration
async def test_a_watch_takes_no_slot_of_the_request_pool(credentials, namespace):
    async with ApiClient(credentials, qps=0, max_connections=1) as client:
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        async with client.stream(path, params={"watch": "1", "timeoutSeconds": "30"}):
            # With the only request connection free, a request goes through while the
            # watch holds its own connection.
            answer = await asyncio.wait_for(client.request("GET", path), timeout=10.0)
            assert answer.status == 200
        assert client.watch_connections_opened == 1
        assert client.connections_opened == 1
