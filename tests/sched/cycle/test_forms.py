"""The burst cycle's pod dicts (sched/informers/forms.py's memo): a queued pod is converted
to an API dict once per object version, however often it is attempted; on the real API
server, a pod retried three times was converted once and a bound pod once."""

from __future__ import annotations

import msgspec

from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.config import default_config
from kubesalvo.sched.cycle import BurstCycle
from kubesalvo.sched.informers.forms import PodForms
from kubesalvo.sched.informers.models import ObjectMeta, Pod
from kubesalvo.sched.queue import QueueName, SchedulingQueue
from tests.sched.cycle.test_burst import (
    TAINT_KEY,
    cpu_request,
    get_pod,
    pod_condition,
    reporting_cycle,
    toleration,
    until,
)
from tests.sched.cycle.test_burst import nodes as nodes  # the fixture


async def test_a_pod_retried_three_times_is_converted_once_and_a_bound_one_once(
    api, nodes, namespace, create_pod
):
    group = nodes[0]["metadata"]["labels"][TAINT_KEY]
    cycle, queue, recorder, _ = await reporting_cycle(api, group)
    # Two 2-cpu nodes: the 3-cpu pod fits nowhere, the 1-cpu one is bound.
    big = await create_pod(
        namespace, "big", tolerations=toleration(group), containers=cpu_request("3")
    )
    small = await create_pod(
        namespace, "small", tolerations=toleration(group), containers=cpu_request("1")
    )
    queue.add(msgspec.convert(big, Pod))
    queue.add(msgspec.convert(small, Pod))
    key = big["metadata"]["uid"]
    cycle.start()
    try:

        async def attempted(times: int) -> bool:
            queued = queue.get(key)
            return (
                queued is not None
                and queued.attempts >= times
                and queue.where(key) is QueueName.UNSCHEDULABLE
            )

        async def bound() -> bool:
            return bool((await get_pod(api, namespace, "small"))["spec"].get("nodeName"))

        await until(bound)
        await until(lambda: attempted(1))
        assert (await pod_condition(api, namespace, "big"))["status"] == "False"
        for times in (2, 3):
            queue.activate([key])
            await until(lambda times=times: attempted(times))
        assert cycle.forms.conversions == 2
    finally:
        await cycle.stop()
        await recorder.stop()


async def test_the_cycles_nomination_goes_beside_the_shared_dict_never_into_it(api):
    # The cycle's objects and preemption's pending pods carry the nomination this process
    # wrote before the watch shows it; the memo's dict, read by everyone, stays the
    # version's own.
    forms = PodForms()
    config = default_config()
    queue = SchedulingQueue.from_config(config)
    cycle = BurstCycle(config, SchedulerCache(), queue, api, forms=forms)
    queued = Pod(metadata=ObjectMeta(name="p", namespace="ns", uid="uid-p", resource_version="1"))
    queue.add(queued)
    queue.nominate("uid-p", "node-1")
    qp = queue.get("uid-p")
    assert qp is not None
    shared = forms.api(queued)
    objects = [shared]
    assert cycle._nominations([qp], objects) == []  # the only nominated pod is in the burst
    assert objects[0]["status"]["nominatedNodeName"] == "node-1"
    assert cycle._with_nomination(qp)["status"]["nominatedNodeName"] == "node-1"
    assert "nominatedNodeName" not in (shared.get("status") or {})
    assert forms.api(queued) is shared
    assert forms.conversions == 1
