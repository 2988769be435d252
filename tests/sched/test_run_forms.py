"""One API dict per pod version through a whole run, on the real control plane.

``Scheduler`` (sched/app.py) runs in the test's event loop with a schedulerName of its own,
its pod memo (sched/informers/forms.py) converting through a counting function: a pod
bound by someone else (counted by the cache from its dict), a burst with a pod that fits
nowhere, retried three times, and a high-priority pod that preempts (decided on the
memo's dicts in a worker thread, nominated, bound after its victims go), with pod updates
judged by the queueing hints in between (a parked pod's own label, then an assigned pod's
label that brings it back). Every version converted is converted once, whoever asked for
it first, the queue's hints included.
"""

from __future__ import annotations

import asyncio
import gc
import secrets
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from kubesalvo.sched.app import Scheduler
from kubesalvo.sched.client import ApiClient, ApiError
from kubesalvo.sched.config import parse_config
from kubesalvo.sched.informers import to_api_dict
from kubesalvo.sched.queue import QueueName
from kubesalvo.sched.serving import ServingOptions
from tests.helpers.objects import priority_class
from tests.sched.cycle.test_burst import TAINT_KEY, cpu_request, own_node, toleration
from tests.sched.test_app import ELECTION_OFF

pytestmark = pytest.mark.integration

CONFIG = (
    ELECTION_OFF
    + """\
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
profiles:
- schedulerName: {name}
kubesalvo:
  burstGatheringWindow: 50ms
"""
)


@pytest.fixture
async def group(api: ApiClient) -> AsyncIterator[str]:
    """This test's name for its scheduler, its two 2-cpu nodes (tainted: no other test's
    pods land there) and its PriorityClasses ``{group}-low`` (10), ``{group}-top``."""
    name = f"forms-{secrets.token_hex(3)}"
    nodes = [own_node(f"{name}-{i}", name, "2") for i in range(2)]
    classes = [priority_class(f"{name}-low", 10), priority_class(f"{name}-top", 100_000)]
    for node in nodes:
        await api.request("POST", "/api/v1/nodes", body=msgspec.json.encode(node))
    for made in classes:
        path = "/apis/scheduling.k8s.io/v1/priorityclasses"
        await api.request("POST", path, body=msgspec.json.encode(made))
    try:
        yield name
    finally:
        paths = [f"/api/v1/nodes/{n['metadata']['name']}" for n in nodes]
        paths += [
            f"/apis/scheduling.k8s.io/v1/priorityclasses/{c['metadata']['name']}" for c in classes
        ]
        for path in paths:
            try:
                await api.request("DELETE", path)
            except ApiError as error:
                if error.status != 404:
                    raise


@pytest.fixture
def collector_settings() -> AsyncIterator[None]:
    """``Scheduler.run`` tunes and freezes the collector for its process: undone after."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


async def test_a_run_converts_each_pod_version_once_through_retries_preemption_and_the_cache(
    api, group, namespace, create_pod, eventually, collector_settings
):
    scheduler = Scheduler(
        parse_config(CONFIG.format(name=group)),
        api,
        serving=ServingOptions(secure_port=0),
        debug_port=0,
        tie_seed=1,
    )
    converted: list[tuple[str, str]] = []

    def counted(pod: Any) -> dict[str, Any]:
        converted.append((pod.metadata.uid, pod.metadata.resource_version))
        return to_api_dict(pod)

    scheduler.forms.convert = counted
    # The queue's reads (its hints, its update events) go through the memo: seen here.
    read_by_queue: list[tuple[str, str]] = []

    def queue_reads(pod: Any) -> dict[str, Any]:
        read_by_queue.append((pod.metadata.uid, pod.metadata.resource_version))
        return scheduler.forms.api(pod)

    scheduler.queue.pod_api = queue_reads
    store = scheduler.pods.store

    def ours(name: str) -> Any:
        return store.get(f"{namespace}/{name}")

    def bound(*names: str) -> bool:
        return all(ours(n) is not None and ours(n).spec.node_name for n in names)

    def running(*names: str) -> bool:
        return all(ours(n) is not None and ours(n).status.phase == "Running" for n in names)

    async def pod(name: str, cpu: str, priority: str, **spec: Any) -> dict[str, Any]:
        return await create_pod(
            namespace,
            name,
            schedulerName=group,
            priorityClassName=f"{group}-{priority}",
            tolerations=toleration(group),
            # The toleration lets them onto this test's nodes; the selector keeps them off
            # the untainted nodes other tests leave on the shared control plane.
            nodeSelector={TAINT_KEY: group},
            containers=cpu_request(cpu),
            **spec,
        )

    task = asyncio.create_task(scheduler.run())
    try:
        # Bound by someone else: the cache counts it from the memo's dict.
        elsewhere = await pod("elsewhere", "500m", "low", nodeName=f"{group}-0")
        await eventually(lambda: elsewhere["metadata"]["uid"] in scheduler.cache.state.pods, 60)
        lows = [f"low-{i}" for i in range(3)]
        for name in lows:
            await pod(name, "1", "low")
        big = await pod("big", "3", "low")  # fits on no 2-cpu node, preempts no peer
        key = big["metadata"]["uid"]

        def attempted(times: int) -> bool:
            queued = scheduler.queue.get(key)
            return (
                queued is not None
                and queued.attempts >= times
                and scheduler.queue.where(key) is QueueName.UNSCHEDULABLE
            )

        await eventually(lambda: bound(*lows) and attempted(1), 60, "the burst")
        # Bound pods' last version (kwok's Running) before the decisions, so that each
        # step starts from settled pods (a decision reading a version replaced meanwhile
        # finds it among the memo's retired versions: no second conversion either way).
        await eventually(lambda: running("elsewhere", *lows), 60, "kwok's Running")
        for times in (2, 3):
            scheduler.queue.activate([key])
            await eventually(lambda times=times: attempted(times), 60, f"attempt {times}")
        # Pod updates through the queueing hints: "lonely" wants a pod labelled
        # buddy=<group> on its node and is parked by InterPodAffinity; a label of its own
        # is judged (no help), then "elsewhere" labelled so (an assigned pod's update)
        # brings it back, and it joins "elsewhere" on its node.
        lonely = await pod("lonely", "100m", "low", affinity=_wants_buddy(group))
        lonely_key = lonely["metadata"]["uid"]

        def parked(name: str, key: str) -> bool:
            queued = scheduler.queue.get(key)
            return (
                queued is not None
                and queued.pod is ours(name)
                and "InterPodAffinity" in queued.rejectors
                and scheduler.queue.where(key) is QueueName.UNSCHEDULABLE
            )

        await eventually(lambda: parked("lonely", lonely_key), 60, "lonely parked")
        await _label(api, namespace, "lonely", {"touched": "yes"})
        await eventually(
            lambda: (
                ours("lonely").metadata.labels.get("touched") == "yes"
                and parked("lonely", lonely_key)
            ),
            60,
            "lonely's own update judged",
        )
        unlabelled = ours("elsewhere").metadata.resource_version
        labelled = await _label(api, namespace, "elsewhere", {"buddy": group})
        await eventually(lambda: bound("lonely"), 60, "lonely bound beside its buddy")
        assert ours("lonely").spec.node_name == f"{group}-0"
        assert _incoming(scheduler, "AssignedPodUpdatePodLabel") >= 1
        await eventually(lambda: running("lonely"), 60, "kwok's Running")
        # 0.4 cpu left over the two nodes: the 2-cpu top pod preempts lows of one node.
        await pod("top", "2", "top")
        await eventually(lambda: bound("top"), 120, "the preemptor bound")
        victims = [name for name in lows if ours(name) is None]
    finally:
        scheduler.stop()
        await task
    assert victims, "the top pod preempted no low pod"
    assert attempted(3)
    assert scheduler.forms.conversions == len(converted) > 0
    assert len(set(converted)) == len(converted), "a pod version was converted twice"
    # Bounded by the live pods: entries only for pods the informer's store holds now.
    stats = scheduler.forms.stats()
    assert stats["conversions"] == len(converted)
    assert stats["entries"] <= len(store)
    uids = {uid for uid, _ in converted}
    assert elsewhere["metadata"]["uid"] in uids
    assert key in uids
    assert lonely_key in uids
    # The hints read both versions of "elsewhere" around its label, and "lonely", from
    # the memo: converted once in all (above), whoever asked first.
    assert (elsewhere["metadata"]["uid"], unlabelled) in read_by_queue
    assert (elsewhere["metadata"]["uid"], labelled) in read_by_queue
    assert lonely_key in {uid for uid, _ in read_by_queue}
    assert set(read_by_queue) <= set(converted)


def _wants_buddy(group: str) -> dict[str, Any]:
    term = {
        "labelSelector": {"matchLabels": {"buddy": group}},
        "topologyKey": "kubernetes.io/hostname",
    }
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


async def _label(api: ApiClient, namespace: str, name: str, labels: dict[str, str]) -> str:
    """Adds ``labels`` to the pod; returns its new resourceVersion."""
    response = await api.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/{name}",
        body=msgspec.json.encode({"metadata": {"labels": labels}}),
        content_type="application/merge-patch+json",
    )
    patched: dict[str, Any] = msgspec.json.decode(response.body)
    return str(patched["metadata"]["resourceVersion"])


def _incoming(scheduler: Scheduler, event: str) -> float:
    """Pods the queue moved on ``event`` (scheduler_queue_incoming_pods_total)."""
    registry = scheduler.metrics.registry
    return sum(
        registry.get_sample_value(
            "scheduler_queue_incoming_pods_total", {"queue": queue, "event": event}
        )
        or 0.0
        for queue in ("active", "backoff")
    )
