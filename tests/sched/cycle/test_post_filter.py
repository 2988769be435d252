"""The post-filter part of FailedScheduling texts, read back from the real API server.

kube-scheduler v1.34 runs DynamicResources' PostFilter before DefaultPreemption's (both
in the default profile); for a pod without resource claims it answers "no new claims
to deallocate", joined to preemption's text by ", ". With DynamicResources disabled in
the profile, preemption's text stands alone. One 2-cpu node is full of 1-cpu pods of the
preemptor's own priority, so preemption finds no victims.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubesalvo.sched.config import default_config, parse_config
from kubesalvo.sched.events import EventRecorder
from tests.sched.cycle.test_burst import events_of, get_pod
from tests.sched.cycle.test_preemption_background import Setup, until
from tests.sched.cycle.test_preemption_background import classes as classes  # the fixture

pytestmark = pytest.mark.integration

WITHOUT_DYNAMIC_RESOURCES = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: kubesalvo
  plugins:
    multiPoint:
      disabled:
      - name: DynamicResources
"""

FIT = "0/1 nodes are available: 1 Insufficient cpu."
PREEMPTION = "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."


@pytest.fixture
async def recorder(api) -> AsyncIterator[EventRecorder]:
    made = EventRecorder(api)
    made.start()
    try:
        yield made
    finally:
        await made.stop()


async def _reported(setup: Setup, recorder: EventRecorder, name: str) -> tuple[str, str]:
    """The PodScheduled=False condition's message and the FailedScheduling event's note."""
    await recorder.flush(10)

    async def written() -> bool:
        pod = await get_pod(setup.api, setup.namespace, name)
        conditions = {c["type"]: c for c in pod["status"].get("conditions", [])}
        return conditions.get("PodScheduled", {}).get("status") == "False"

    await until(written, "the PodScheduled condition")
    pod = await get_pod(setup.api, setup.namespace, name)
    (condition,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    events = await events_of(setup.api, setup.namespace)
    (event,) = [
        e for e in events if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == name
    ]
    return str(condition["message"]), str(event["note"])


async def _attempt(
    api: Any, namespace: str, classes: dict[str, str], create_pod: Any, recorder: Any, config: Any
) -> tuple[str, str]:
    setup = Setup(api, namespace, classes, recorder)
    await setup.start(create_pod, config)
    setup.gate.opened.set()
    try:
        # Of the fillers' own priority: nothing on the node can be evicted for it.
        await setup.create(create_pod, "waiter", "low", "1")
        await setup.cycle.schedule(setup.queue.pop_burst(10))

        async def decided() -> bool:
            return setup.cycle.preemptions_pending == 0

        await until(decided, "the preemption decision")
        return await _reported(setup, recorder, "waiter")
    finally:
        await setup.cycle.stop(drain_timeout=5)
        await setup.delete()


async def test_with_dynamic_resources_its_reason_comes_before_preemptions(
    api, namespace, classes, create_pod, recorder
):
    message, note = await _attempt(api, namespace, classes, create_pod, recorder, default_config())
    expected = f"{FIT} no new claims to deallocate, {PREEMPTION}"
    assert message == expected
    assert note == expected


async def test_without_dynamic_resources_preemptions_text_stands_alone(
    api, namespace, classes, create_pod, recorder
):
    config = parse_config(WITHOUT_DYNAMIC_RESOURCES)
    assert "DynamicResources" not in config.profiles[0].plugins.at("postFilter")
    message, note = await _attempt(api, namespace, classes, create_pod, recorder, config)
    assert message == f"{FIT} {PREEMPTION}"
    assert note == f"{FIT} {PREEMPTION}"
