"""The burst cycle on the real API server: a burst is placed by the kernel and bound, the
pods that fit nowhere get kube-scheduler's FailedScheduling event and PodScheduled=False
condition and wait in the queue, a replica that does not lead never binds, and one that
loses the lease stops its binds in flight at once. Pods with invalid label selectors get
kube-scheduler's texts: an error (SchedulerError) for a spread constraint's, a PreFilter
rejection for an affinity term's."""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import msgspec
import pytest

from kubesalvo.sched.binder import BinderSettings, BindOutcome
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


# A burst this small is placed on the event loop by default; 0 sends it to the worker
# thread, as a large burst is: both ways bind and report alike.
@pytest.mark.parametrize("inline_pod_nodes", [40_000, 0], ids=["on-the-loop", "worker-thread"])
async def test_a_burst_is_bound_and_the_pod_that_fits_nowhere_is_reported(
    api, nodes, namespace, create_pod, eventually, inline_pod_nodes
):
    group = nodes[0]["metadata"]["labels"][TAINT_KEY]
    cycle, queue, recorder, metrics = await reporting_cycle(api, group, inline_pod_nodes)
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

    # The housekeeping before each burst (and every second) sets the pending gauges: the
    # pod that fits nowhere waits, parked or backing off, and no other.
    def pending() -> dict[str, float]:
        found = re.findall(
            r'scheduler_pending_pods\{queue="(\w+)"\} (\S+)', metrics.render().decode()
        )
        return {queue: float(value) for queue, value in found}

    while pending() != {"active": 0.0, "backoff": 0.0, "unschedulable": 1.0, "gated": 0.0}:
        counts = pending()
        if counts.get("backoff") == 1.0 and sum(counts.values()) == 1.0:
            break
        assert asyncio.get_running_loop().time() < deadline + 20, counts
        await asyncio.sleep(0.1)
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


async def reporting_cycle(
    api: ApiClient, group: str, inline_pod_nodes: int = CycleSettings.inline_pod_nodes
) -> tuple[BurstCycle, SchedulingQueue, EventRecorder, SchedulerMetrics]:
    """A started event recorder and a cycle over this test's nodes (not started)."""
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
        settings=CycleSettings(
            max_burst_pods=100, gathering_window=0.05, inline_pod_nodes=inline_pod_nodes
        ),
    )
    return cycle, queue, recorder, metrics


# An In requirement without values (apimachinery refuses it). The API server refuses
# such a selector in a new pod, but older objects carry them: the tests give one to the
# queued copy of a pod they created.
INVALID = {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}
INVALID_ERROR = (
    "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
)


async def until(check: Callable[[], Awaitable[bool]], timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "not reached in time"
        await asyncio.sleep(0.1)


async def pod_condition(api: ApiClient, namespace: str, name: str) -> dict[str, Any]:
    pod = await get_pod(api, namespace, name)
    conditions = {c["type"]: c for c in pod["status"].get("conditions", [])}
    return conditions.get("PodScheduled", {})


async def test_an_invalid_spread_selector_is_reported_as_a_scheduler_error_and_backed_off(
    api, nodes, namespace, create_pod
):
    # PodTopologySpread's PreFilter fails the attempt with an error: kube-scheduler
    # reports it with the condition reason SchedulerError and retries after the error
    # backoff, without PostFilter; the rest of the burst is placed as usual.
    group = nodes[0]["metadata"]["labels"][TAINT_KEY]
    cycle, queue, recorder, metrics = await reporting_cycle(api, group)
    constraint = {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "test"}},
    }
    bad = await create_pod(
        namespace, "bad", tolerations=toleration(group), topologySpreadConstraints=[constraint]
    )
    good = await create_pod(namespace, "good", tolerations=toleration(group))
    bad["spec"]["topologySpreadConstraints"][0]["labelSelector"] = INVALID
    queue.add(msgspec.convert(bad, Pod))
    queue.add(msgspec.convert(good, Pod))
    cycle.start()
    message = (
        'running PreFilter plugin "PodTopologySpread": get constraints from pod: '
        "obtaining pod's hard topology spread constraints: " + INVALID_ERROR
    )

    async def reported() -> bool:
        placed = (await get_pod(api, namespace, "good"))["spec"].get("nodeName")
        return (
            bool(placed) and (await pod_condition(api, namespace, "bad")).get("status") == "False"
        )

    await until(reported)
    attempt = cycle.attempts[f"{namespace}/bad"]
    assert attempt.node is None and attempt.message == message and attempt.reason_counts == {}
    assert queue.where(bad["metadata"]["uid"]) is not QueueName.UNSCHEDULABLE
    condition = await pod_condition(api, namespace, "bad")
    assert condition["reason"] == "SchedulerError"
    assert condition["message"] == message
    await recorder.flush(10)
    failed = [e for e in await events_of(api, namespace) if e["reason"] == "FailedScheduling"]
    assert {e["regarding"]["name"] for e in failed} == {"bad"}
    assert {e["note"] for e in failed} == {message}
    text = metrics.render().decode()
    assert 'scheduler_schedule_attempts_total{profile="kubesalvo",result="error"}' in text
    await cycle.stop()
    await recorder.stop()


async def test_an_invalid_affinity_term_is_rejected_before_dynamic_resources_prefilter_runs(
    api, nodes, namespace, create_pod
):
    # InterPodAffinity's PreFilter rejects the pod as unresolvable, which ends the
    # PreFilter run before DynamicResources' (after it in the default profile): its
    # PostFilter then finds no state and ends the PostFilter run with "not found".
    group = nodes[0]["metadata"]["labels"][TAINT_KEY]
    cycle, queue, recorder, _ = await reporting_cycle(api, group)
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    bad = await create_pod(namespace, "bad", tolerations=toleration(group), affinity=affinity)
    required = bad["spec"]["affinity"]["podAntiAffinity"]
    required["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"] = INVALID
    queue.add(msgspec.convert(bad, Pod))
    cycle.start()
    message = (
        f"0/2 nodes are available: parsing pod: requiredAntiAffinityTerms: {INVALID_ERROR}."
        " not found"
    )

    async def reported() -> bool:
        return (await pod_condition(api, namespace, "bad")).get("status") == "False"

    await until(reported)
    assert cycle.attempts[f"{namespace}/bad"].message == message
    condition = await pod_condition(api, namespace, "bad")
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == message
    await cycle.stop()
    await recorder.stop()


async def test_while_binds_wait_for_a_slot_pods_arriving_apart_are_gathered_into_one_burst(
    api, proxy, proxied_api, nodes, namespace, create_pod, eventually
):
    """Pods arriving further apart than the window go one by one while the binder has a
    free slot; once binds wait for one (one slot, its bind throttled for a minute), the
    cycle keeps collecting (sched/cycle/gathering.py) and places them in one burst."""
    group = nodes[0]["metadata"]["labels"][TAINT_KEY]
    config = default_config()
    cache = await fed_cache(api, group)
    queue = SchedulingQueue.from_config(config)
    cycle = BurstCycle(
        config,
        cache,
        queue,
        proxied_api,
        settings=CycleSettings(gathering_window=0.05),
        binder_settings=BinderSettings(max_in_flight=1),
    )
    pods = {
        name: msgspec.convert(await create_pod(namespace, name, tolerations=toleration(group)), Pod)
        for name in ("free-0", "free-1", "held-0", "held-1", "b0", "b1", "b2")
    }
    cycle.start()
    bound = cycle.binder.counts
    queue.add(pods["free-0"])  # the slot is free: each goes alone
    await eventually(lambda: bound[BindOutcome.BOUND] == 1, what="free-0 bound")
    queue.add(pods["free-1"])
    await eventually(lambda: bound[BindOutcome.BOUND] == 2, what="free-1 bound")
    assert cycle.bursts == 2

    proxy.faults.throttle, proxy.faults.retry_after = 1_000, 60
    queue.add(pods["held-0"])  # holds the one slot, throttled
    await eventually(lambda: proxy.stats.throttled >= 1, what="a throttled bind")
    queue.add(pods["held-1"])  # waits for the slot
    await eventually(lambda: cycle.binder.waiting == 1, what="a bind waiting for the slot")
    assert cycle.bursts == 4
    for name in ("b0", "b1", "b2"):  # twice the window apart
        queue.add(pods[name])
        await asyncio.sleep(0.1)
    await eventually(lambda: cycle.binder.waiting == 4, what="three more binds waiting")
    assert cycle.bursts == 5 and cycle.recent_bursts[-1].pods == 3

    cycle.leadership_changed(False)  # cancels the throttled binds at once
    await cycle.stop()
