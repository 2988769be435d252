"""The binder: its request body and how it reads conflicts, then binds on the real API
server through the fault proxy (5xx before and after the API server applied a bind, 429
with Retry-After), with every pod bound exactly once, and refusals that are forgotten."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from kubesalvo.sched.binder import (
    Binder,
    BinderSettings,
    BindOutcome,
    binding_body,
    classify_conflict,
)
from kubesalvo.sched.client import ApiError
from kubesalvo.sched.metrics import SchedulerMetrics


def test_binding_body_is_a_v1_binding_with_a_uid_precondition():
    body = msgspec.json.decode(binding_body("team-a", "web-1", "uid-123", "node-7"))
    assert body == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web-1", "namespace": "team-a", "uid": "uid-123"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-7"},
    }


def _conflict(message: str) -> ApiError:
    return ApiError(
        409, msgspec.json.encode({"reason": "Conflict", "message": message, "code": 409})
    )


def test_a_conflict_naming_our_own_node_means_an_earlier_attempt_bound_the_pod():
    error = _conflict(
        'Operation cannot be fulfilled on pods/binding "web-1": pod web-1 is already '
        'assigned to node "node-7"'
    )
    assert classify_conflict(error, "node-7") is BindOutcome.BOUND


def test_a_pod_bound_to_another_node_is_forgotten():
    error = _conflict(
        'Operation cannot be fulfilled on pods/binding "web-1": pod web-1 is already '
        'assigned to node "node-3"'
    )
    assert classify_conflict(error, "node-7") is BindOutcome.FORGOTTEN


def test_a_uid_precondition_failure_is_forgotten():
    error = _conflict(
        'Operation cannot be fulfilled on pods "web-1": StorageError: invalid object, '
        "Precondition failed: UID in precondition: old, UID in object meta: new"
    )
    assert classify_conflict(error, "node-7") is BindOutcome.FORGOTTEN


# -- against the real API server ---------------------------------------------------------

FAST = BinderSettings(backoff_initial=0.02, backoff_max=0.2)


@pytest.fixture
def nodes(control_plane) -> list[str]:
    return [node["metadata"]["name"] for node in control_plane.add_nodes(3)]


async def node_of(api, namespace: str, name: str) -> str:
    response = await api.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    return msgspec.json.decode(response.body)["spec"].get("nodeName", "")


@pytest.mark.integration
async def test_every_pod_is_bound_exactly_once_through_5xx_and_429(
    proxied_api, proxy, api, namespace, create_pod, nodes
):
    pods = [await create_pod(namespace, f"web-{i}") for i in range(30)]
    bound: list[str] = []
    metrics = SchedulerMetrics()
    binder = Binder(proxied_api, FAST, on_bound=lambda r: bound.append(r.name), metrics=metrics)

    async def bind_all(batch: list[dict], offset: int) -> list:
        tasks = [
            binder.bind(namespace, p["metadata"]["name"], p["metadata"]["uid"], nodes[i % 3])
            for i, p in enumerate(batch, start=offset)
        ]
        return list(await asyncio.gather(*tasks))

    # First lost answers (the server applied the bind, the client saw 503) and throttling,
    # then refusals before the server saw anything.
    proxy.faults.bind_errors = 8
    proxy.faults.bind_error_after_forward = True
    proxy.faults.throttle = 6
    proxy.faults.retry_after = 1
    results = await bind_all(pods[:15], 0)
    proxy.faults.bind_errors = 8
    proxy.faults.bind_error_after_forward = False
    results += await bind_all(pods[15:], 15)

    assert {r.outcome for r in results} == {BindOutcome.BOUND}
    assert sorted(bound) == sorted(p["metadata"]["name"] for p in pods)
    assert proxy.stats.throttled == 6 and proxy.stats.bind_errors == 16
    accepted = proxy.stats.binds_accepted
    assert len(accepted) == 30 and set(accepted.values()) == {1}
    assert b'kubesalvo_binds_total{result="bound"} 30.0' in metrics.render()
    for i, p in enumerate(pods):
        assert await node_of(api, namespace, p["metadata"]["name"]) == nodes[i % 3]


@pytest.mark.integration
async def test_a_recreated_pod_is_never_bound_to_the_old_pods_placement(
    api, namespace, create_pod, nodes
):
    old = await create_pod(namespace, "reborn")
    await api.request(
        "DELETE", f"/api/v1/namespaces/{namespace}/pods/reborn", params={"gracePeriodSeconds": "0"}
    )
    await create_pod(namespace, "reborn")
    forgotten = []
    binder = Binder(api, FAST, on_forget=forgotten.append)
    result = await binder.bind(namespace, "reborn", old["metadata"]["uid"], nodes[0])
    assert result.outcome is BindOutcome.FORGOTTEN
    assert "Precondition failed: UID" in result.error.message
    assert forgotten == [result]
    assert await node_of(api, namespace, "reborn") == ""


@pytest.mark.integration
async def test_a_missing_pod_or_one_bound_elsewhere_is_forgotten(api, namespace, create_pod, nodes):
    pod = await create_pod(namespace, "taken")
    binder = Binder(api, FAST)
    uid = pod["metadata"]["uid"]
    assert (await binder.bind(namespace, "taken", uid, nodes[0])).outcome is BindOutcome.BOUND
    elsewhere = await binder.bind(namespace, "taken", uid, nodes[1])
    assert elsewhere.outcome is BindOutcome.FORGOTTEN and elsewhere.error.status == 409
    missing = await binder.bind(namespace, "no-such-pod", "uid", nodes[0])
    assert missing.outcome is BindOutcome.FORGOTTEN and missing.error.status == 404
    assert await node_of(api, namespace, "taken") == nodes[0]


@pytest.mark.integration
async def test_a_bind_that_keeps_failing_is_reported_failed_for_requeueing(
    proxied_api, proxy, api, namespace, create_pod, nodes
):
    pod = await create_pod(namespace, "unlucky")
    proxy.faults.bind_errors = 100
    proxy.faults.bind_error_status = 500
    failed = []
    binder = Binder(
        proxied_api, BinderSettings(max_attempts=3, backoff_initial=0.01), on_failed=failed.append
    )
    result = await binder.bind(namespace, "unlucky", pod["metadata"]["uid"], nodes[0])
    assert result.outcome is BindOutcome.FAILED and result.attempts == 3
    assert result.error.status == 500
    assert failed == [result]
    assert await node_of(api, namespace, "unlucky") == ""


@pytest.mark.integration
async def test_a_replica_that_is_not_the_leader_sends_no_bind(api, namespace, create_pod, nodes):
    pod = await create_pod(namespace, "follower")
    binder = Binder(api, FAST, is_leader=lambda: False)
    result = await binder.bind(namespace, "follower", pod["metadata"]["uid"], nodes[0])
    assert result.outcome is BindOutcome.FAILED and result.attempts == 0
    assert await node_of(api, namespace, "follower") == ""


@pytest.mark.integration
async def test_cancelling_all_binds_settles_each_as_failed_at_once(
    proxied_api, proxy, api, namespace, create_pod, nodes, eventually
):
    pods = [await create_pod(namespace, f"held-{i}") for i in range(5)]
    # Every bind is told to come back in a minute: all five are waiting when leadership goes.
    proxy.faults.throttle, proxy.faults.retry_after = 1_000, 60
    failed = []
    binder = Binder(proxied_api, FAST, on_failed=failed.append)
    tasks = [
        binder.bind(namespace, p["metadata"]["name"], p["metadata"]["uid"], nodes[0]) for p in pods
    ]
    await eventually(lambda: proxy.stats.throttled >= 5, what="five throttled binds")
    assert binder.in_flight == 5
    await binder.cancel_all()
    results = [task.result() for task in tasks]
    assert {r.outcome for r in results} == {BindOutcome.FAILED}
    assert len(failed) == 5 and binder.in_flight == 0
    for p in pods:
        assert await node_of(api, namespace, p["metadata"]["name"]) == ""


def test_a_conflict_from_the_storage_under_the_api_server_is_retried_not_forgotten():
    # What kube-apiserver 1.34 answered while etcd was down (seen in the etcd restart test).
    error = _conflict(
        'Operation cannot be fulfilled on pods/binding "web-1": rpc error: code = '
        "Unavailable desc = error reading from server: EOF"
    )
    assert classify_conflict(error, "node-7") is None


# -- a prepare step (the PreBind plugins) before the POST --------------------------------


@pytest.mark.integration
async def test_a_failing_prepare_step_settles_the_bind_failed_without_a_post(
    api, namespace, create_pod, nodes
):
    pod = await create_pod(namespace, "unprepared")
    failed = []
    binder = Binder(api, FAST, on_failed=failed.append)
    problem = RuntimeError("volume not bound")

    async def prepare() -> None:
        raise problem

    result = await binder.bind(namespace, "unprepared", pod["metadata"]["uid"], nodes[0], prepare)
    assert result.outcome is BindOutcome.FAILED and result.attempts == 0
    assert result.error is problem and failed == [result]
    assert await node_of(api, namespace, "unprepared") == ""


@pytest.mark.integration
async def test_a_waiting_prepare_step_holds_no_bind_slot_and_binds_when_done(
    api, namespace, create_pod, nodes
):
    """With one bind in flight allowed, a pod whose PreBind waits does not hold back the
    next pod's bind; once its PreBind ends, it is bound too."""
    slow = await create_pod(namespace, "slow")
    quick = await create_pod(namespace, "quick")
    binder = Binder(api, BinderSettings(max_in_flight=1))
    release = asyncio.Event()
    order: list[str] = []

    async def prepare() -> None:
        await release.wait()
        order.append(await node_of(api, namespace, "slow"))

    held = binder.bind(namespace, "slow", slow["metadata"]["uid"], nodes[0], prepare)
    free = await binder.bind(namespace, "quick", quick["metadata"]["uid"], nodes[1])
    assert free.outcome is BindOutcome.BOUND and not held.done()
    release.set()
    assert (await held).outcome is BindOutcome.BOUND
    assert order == [""]  # the prepare step ran before the pod was bound
    assert await node_of(api, namespace, "slow") == nodes[0]


@pytest.mark.integration
async def test_a_replica_that_does_not_lead_runs_no_prepare_step(api, namespace, create_pod, nodes):
    pod = await create_pod(namespace, "not-prepared")
    ran = []

    async def prepare() -> None:
        ran.append(True)

    binder = Binder(api, FAST, is_leader=lambda: False)
    result = await binder.bind(namespace, "not-prepared", pod["metadata"]["uid"], nodes[0], prepare)
    assert result.outcome is BindOutcome.FAILED and ran == []


@pytest.mark.integration
async def test_binds_waiting_for_a_slot_are_counted_until_each_is_sent(
    proxied_api, proxy, api, namespace, create_pod, nodes, eventually
):
    """With one slot, a throttled bind holds it: the two handed over after it wait for the
    slot, and a PreBind that waits is not counted (it holds no slot); once the throttling
    ends every bind is sent and none waits."""
    pods = [await create_pod(namespace, f"queued-{i}") for i in range(3)]
    prepared = await create_pod(namespace, "preparing")
    proxy.faults.throttle, proxy.faults.retry_after = 1_000, 60
    binder = Binder(proxied_api, BinderSettings(max_in_flight=1))
    release = asyncio.Event()
    tasks = [
        binder.bind(namespace, p["metadata"]["name"], p["metadata"]["uid"], nodes[0]) for p in pods
    ]
    held = binder.bind(namespace, "preparing", prepared["metadata"]["uid"], nodes[1], release.wait)
    await eventually(lambda: proxy.stats.throttled >= 1, what="the first bind throttled")
    assert binder.waiting == 2 and binder.in_flight == 4
    await binder.cancel_all()
    assert binder.waiting == 0 and all(t.result().outcome is BindOutcome.FAILED for t in tasks)
    assert held.result().outcome is BindOutcome.FAILED

    proxy.faults.throttle = 0
    again = [
        binder.bind(namespace, p["metadata"]["name"], p["metadata"]["uid"], nodes[0]) for p in pods
    ]
    results = await asyncio.gather(*again)
    assert {r.outcome for r in results} == {BindOutcome.BOUND}
    assert binder.waiting == 0 and binder.in_flight == 0
