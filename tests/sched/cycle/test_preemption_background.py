"""Preemption off the burst path, on the real control plane.

A gate holds the preemption decision (its picture's node list blocks the worker thread
until released), so what happens while a preemption is pending is seen without timing:
the burst returns at once, its preemptor stays in flight and is not taken by the next
burst, which places and binds its own pod; released, the decision evicts a victim and
nominates the preemptor. Losing the lease drops the queued jobs and the running one
writes nothing; stopping the cycle does not wait for a decision past its drain timeout.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec
import pytest

from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.client import ApiClient, ApiError
from kubesalvo.sched.config import SchedulerConfig, default_config
from kubesalvo.sched.cycle import BurstCycle, ClusterObjects, CycleSettings
from kubesalvo.sched.events import EventRecorder
from kubesalvo.sched.informers import to_api_dict
from kubesalvo.sched.informers.models import Node, Pod
from kubesalvo.sched.queue import QueueName, SchedulingQueue
from tests.sched.cycle.test_burst import cpu_request, get_pod, own_node, toleration
from tests.sched.test_run_nominated import priority_class

pytestmark = pytest.mark.integration


class Gate(list[Any]):
    """A node list whose iteration (in the decision's worker thread) waits for ``open``."""

    def __init__(self, items: list[Any]) -> None:
        super().__init__(items)
        self.opened = threading.Event()
        self.entered = threading.Event()

    def __iter__(self) -> Iterator[Any]:
        self.entered.set()
        self.opened.wait(60)
        return super().__iter__()


class Setup:
    """One 2-cpu node filled by two 1-cpu low-priority pods; a cycle that preempts."""

    def __init__(
        self,
        api: ApiClient,
        namespace: str,
        classes: dict[str, str],
        recorder: EventRecorder | None = None,
    ) -> None:
        self.api = api
        self.namespace = namespace
        self.classes = classes
        self.group = f"bg-{secrets.token_hex(3)}"
        self.node = own_node(f"{self.group}-0", self.group, "2")
        self.pods: dict[str, Pod] = {}
        self.leading = True
        self.recorder = recorder

    async def start(self, create_pod: Any, config: SchedulerConfig | None = None) -> None:
        body = (
            await self.api.request("POST", "/api/v1/nodes", body=msgspec.json.encode(self.node))
        ).body
        self.node_struct = msgspec.convert(msgspec.json.decode(body), Node)
        config = config or default_config()
        self.queue = SchedulingQueue.from_config(config)
        self.gate = Gate([self.node_struct])
        self.cache = SchedulerCache()
        self.cache.add_node(to_api_dict(self.node_struct))
        self.cycle = BurstCycle(
            config,
            self.cache,
            self.queue,
            self.api,
            is_leader=lambda: self.leading,
            settings=CycleSettings(gathering_window=0),
            cluster=self.cluster,
            recorder=self.recorder,
        )
        for i in range(2):
            await self.create(
                create_pod, f"low-{i}", "low", "1", node=self.node["metadata"]["name"]
            )

    def cluster(self) -> ClusterObjects:
        return ClusterObjects(nodes=self.gate, pods=list(self.pods.values()))

    async def create(self, create_pod: Any, name: str, role: str, cpu: str, node: str = "") -> Pod:
        extra = {"nodeName": node} if node else {}
        made = await create_pod(
            self.namespace,
            name,
            tolerations=toleration(self.group),
            containers=cpu_request(cpu),
            priorityClassName=self.classes[role],
            **extra,
        )
        pod = msgspec.convert(made, Pod)
        self.pods[name] = pod
        if node:
            self.cache.bound_pod(to_api_dict(pod))
        else:
            self.queue.add(pod)
        return pod

    async def delete(self) -> None:
        for name in self.pods:
            path = f"/api/v1/namespaces/{self.namespace}/pods/{name}"
            try:
                await self.api.request("DELETE", path, params={"gracePeriodSeconds": "0"})
            except ApiError as error:
                if error.status != 404:
                    raise
        await self.api.request("DELETE", f"/api/v1/nodes/{self.node['metadata']['name']}")

    async def gone(self, name: str) -> bool:
        try:
            pod = await get_pod(self.api, self.namespace, name)
        except ApiError as error:
            return error.status == 404
        return bool(pod["metadata"].get("deletionTimestamp"))


@pytest.fixture
async def classes(api: ApiClient) -> AsyncIterator[dict[str, str]]:
    token = secrets.token_hex(3)
    made = {"low": f"bg-low-{token}", "high": f"bg-high-{token}"}
    for role, value in (("low", 10), ("high", 10_000)):
        body = msgspec.json.encode(priority_class(made[role], value))
        await api.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body=body)
    try:
        yield made
    finally:
        for name in made.values():
            await api.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


@pytest.fixture
async def setup(api, namespace, classes, create_pod) -> AsyncIterator[Setup]:
    made = Setup(api, namespace, classes)
    await made.start(create_pod)
    try:
        yield made
    finally:
        made.gate.opened.set()
        await made.cycle.stop(drain_timeout=5)
        await made.delete()


async def until(predicate: Any, what: str, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await predicate():
        assert asyncio.get_running_loop().time() < deadline, f"{what} not reached"
        await asyncio.sleep(0.05)


async def test_the_next_burst_runs_while_a_preemption_is_pending(setup, create_pod):
    high = await setup.create(create_pod, "high", "high", "1")
    await setup.cycle.schedule(setup.queue.pop_burst(10))
    # The burst returned with the decision still held at the gate.
    await asyncio.to_thread(setup.gate.entered.wait, 20)
    assert setup.cycle.preemptions_pending == 1
    assert setup.queue.where(high.metadata.uid) is QueueName.IN_FLIGHT

    await setup.create(create_pod, "small", "low", "0")
    burst = setup.queue.pop_burst(10)
    assert [qp.pod.metadata.name for qp in burst] == ["small"]
    await setup.cycle.schedule(burst)

    async def small_bound() -> bool:
        pod = await get_pod(setup.api, setup.namespace, "small")
        return bool(pod["spec"].get("nodeName"))

    await until(small_bound, "the second burst's bind")
    assert setup.cycle.preemptions_pending == 1

    setup.gate.opened.set()

    async def preempted() -> bool:
        return setup.cycle.preemptions_pending == 0

    await until(preempted, "the preemption's end")
    pod = await get_pod(setup.api, setup.namespace, "high")
    assert pod["status"].get("nominatedNodeName") == setup.node["metadata"]["name"]
    assert [await setup.gone(f"low-{i}") for i in range(2)].count(True) == 1
    assert setup.queue.where(high.metadata.uid) in (
        QueueName.UNSCHEDULABLE,
        QueueName.BACKOFF,
        QueueName.ACTIVE,
    )


async def test_losing_the_lease_drops_queued_preemptions_and_writes_nothing(setup, create_pod):
    first = await setup.create(create_pod, "high-a", "high", "1")
    await setup.cycle.schedule(setup.queue.pop_burst(10))
    await asyncio.to_thread(setup.gate.entered.wait, 20)
    second = await setup.create(create_pod, "high-b", "high", "1")
    await setup.cycle.schedule(setup.queue.pop_burst(10))
    assert setup.cycle.preemptions_pending == 2

    setup.leading = False
    setup.cycle.leadership_changed(False)
    # The queued job's pod is back in the queue at once; the running one follows.
    assert setup.queue.where(second.metadata.uid) is not QueueName.IN_FLIGHT
    setup.gate.opened.set()

    async def dropped() -> bool:
        return setup.cycle.preemptions_pending == 0

    await until(dropped, "the running job's end")
    assert setup.queue.where(first.metadata.uid) is not QueueName.IN_FLIGHT
    for name in ("high-a", "high-b"):
        pod = await get_pod(setup.api, setup.namespace, name)
        assert not pod["status"].get("nominatedNodeName")
    assert [await setup.gone(f"low-{i}") for i in range(2)] == [False, False]


async def test_stopping_does_not_wait_for_a_held_decision_past_the_drain_timeout(setup, create_pod):
    await setup.create(create_pod, "high", "high", "1")
    await setup.cycle.schedule(setup.queue.pop_burst(10))
    await asyncio.to_thread(setup.gate.entered.wait, 20)
    await setup.cycle.stop(drain_timeout=0.5)
    assert setup.cycle.preemptions_pending == 0
    setup.gate.opened.set()
    assert [await setup.gone(f"low-{i}") for i in range(2)] == [False, False]
