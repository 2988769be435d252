"""PreBind plugins in the binding cycle, on the real API server: a plugin's writes land
before the pod's Binding, a failed PreBind binds nothing and reports kube-scheduler's
text (an error backs the pod off, a rejection parks it as unschedulable by that plugin),
and a plugin that wanted a pod is told to unreserve it whenever its bind does not end
bound. The texts are upstream's: ``running PreBind plugin "<name>": <error>`` for an
error, the plugin's own message for a rejection."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.cycle.prebind import PreBindRejected, pre_bind_text
from kubesalvo.sched.informers.models import Pod
from kubesalvo.sched.queue import QueuedPod
from tests.sched.cycle.test_burst import (
    TAINT_KEY,
    events_of,
    get_pod,
    nodes,  # noqa: F401  (fixture)
    reporting_cycle,
    toleration,
)

pytestmark = pytest.mark.integration

MARK = "kubesalvo.io/test-pre-bind"


class Recording:
    """A PreBind plugin that writes an annotation on the pods it wants (those named
    ``want-*``), then fails as told: ``fail`` an exception to raise after the write."""

    name = "Recording"

    def __init__(self, api: ApiClient, fail: Exception | None = None) -> None:
        self.api = api
        self.fail = fail
        self.seen_unbound: list[str] = []  # pods whose nodeName was empty in PreBind
        self.unreserved: list[tuple[str, str]] = []

    def wants(self, qp: QueuedPod, node: str) -> bool:
        return qp.pod.metadata.name.startswith("want-")

    async def pre_bind(self, qp: QueuedPod, node: str) -> None:
        meta = qp.pod.metadata
        path = f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}"
        current = msgspec.json.decode((await self.api.request("GET", path)).body)
        if not current["spec"].get("nodeName"):
            self.seen_unbound.append(meta.name)
        patch = {"metadata": {"annotations": {MARK: node}}}
        await self.api.request(
            "PATCH",
            path,
            body=msgspec.json.encode(patch),
            content_type="application/merge-patch+json",
        )
        if self.fail is not None:
            raise self.fail

    def unreserve(self, qp: QueuedPod, node: str) -> None:
        self.unreserved.append((qp.pod.metadata.name, node))


async def _run(api, nodes, namespace, create_pod, plugin, names):  # noqa: F811
    group = nodes[0]["metadata"]["labels"][TAINT_KEY]
    cycle, queue, recorder, _ = await reporting_cycle(api, group)
    cycle.binding.add_pre_bind(plugin)
    for name in names:
        pod = await create_pod(namespace, name, tolerations=toleration(group))
        queue.add(msgspec.convert(pod, Pod))
    cycle.start()
    return cycle, queue, recorder


async def _settle(cycle, recorder, check) -> None:
    deadline = asyncio.get_running_loop().time() + 30
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "not settled within 30s"
        await asyncio.sleep(0.1)
    await recorder.flush(10)


def _condition(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled")


async def test_a_pre_bind_write_lands_before_the_binding_and_others_bind_without_it(
    api,
    nodes,  # noqa: F811
    namespace,
    create_pod,
):
    plugin = Recording(api)
    cycle, _, recorder = await _run(
        api, nodes, namespace, create_pod, plugin, ["want-a", "want-b", "plain"]
    )

    async def bound() -> bool:
        pods = [await get_pod(api, namespace, n) for n in ("want-a", "want-b", "plain")]
        return all(p["spec"].get("nodeName") for p in pods) and cycle.binds_in_flight == 0

    await _settle(cycle, recorder, bound)
    assert sorted(plugin.seen_unbound) == ["want-a", "want-b"]
    for name in ("want-a", "want-b"):
        pod = await get_pod(api, namespace, name)
        assert pod["metadata"]["annotations"][MARK] == pod["spec"]["nodeName"]
    plain = await get_pod(api, namespace, "plain")
    assert MARK not in (plain["metadata"].get("annotations") or {})
    assert plugin.unreserved == []
    await cycle.stop()
    await recorder.stop()


async def test_a_pre_bind_error_binds_nothing_reports_upstreams_text_and_unreserves(
    api,
    nodes,  # noqa: F811
    namespace,
    create_pod,
):
    plugin = Recording(api, fail=RuntimeError("binding volumes: timed out"))
    cycle, _, recorder = await _run(api, nodes, namespace, create_pod, plugin, ["want-x"])
    text = 'running PreBind plugin "Recording": binding volumes: timed out'
    assert pre_bind_text("Recording", RuntimeError("binding volumes: timed out")) == text

    async def reported() -> bool:
        pod = await get_pod(api, namespace, "want-x")
        conditions = pod["status"].get("conditions", [])
        return any(c["type"] == "PodScheduled" for c in conditions) and bool(plugin.unreserved)

    await _settle(cycle, recorder, reported)
    pod = await get_pod(api, namespace, "want-x")
    assert not pod["spec"].get("nodeName")
    assert pod["metadata"]["annotations"][MARK]  # the write happened, the bind did not
    condition = _condition(pod)
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "SchedulerError",
        text,
    )
    failed = [e for e in await events_of(api, namespace) if e["reason"] == "FailedScheduling"]
    assert failed and failed[0]["note"] == text
    assert plugin.unreserved[0] == ("want-x", pod["metadata"]["annotations"][MARK])
    await cycle.stop()
    await recorder.stop()


async def test_a_pre_bind_rejection_parks_the_pod_as_unschedulable_by_that_plugin(
    api,
    nodes,  # noqa: F811
    namespace,
    create_pod,
):
    reason = "node(s) had volume node affinity conflict"
    plugin = Recording(api, fail=PreBindRejected(reason))
    cycle, queue, recorder = await _run(api, nodes, namespace, create_pod, plugin, ["want-y"])

    async def reported() -> bool:
        pod = await get_pod(api, namespace, "want-y")
        conditions = pod["status"].get("conditions", [])
        return any(c["type"] == "PodScheduled" for c in conditions) and bool(plugin.unreserved)

    await _settle(cycle, recorder, reported)
    pod = await get_pod(api, namespace, "want-y")
    assert not pod["spec"].get("nodeName")
    condition = _condition(pod)
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        reason,
    )
    parked = queue.get(pod["metadata"]["uid"])
    assert parked is not None and parked.unschedulable_plugins == {"Recording"}
    await cycle.stop()
    await recorder.stop()
