"""PodForms: a queued pod is converted to an API dict once per object version, however
often it is attempted; on the real API server, a pod retried three times was converted
once and a bound pod once."""

from __future__ import annotations

import msgspec

from kubesalvo.sched.cycle.forms import PodForms
from kubesalvo.sched.informers import to_api_dict
from kubesalvo.sched.informers.models import ObjectMeta, Pod
from kubesalvo.sched.queue import QueueName
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


def pod(name: str, version: str) -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="ns", uid=f"uid-{name}", resource_version=version)
    )


def test_the_same_version_is_converted_once_and_a_new_version_again() -> None:
    forms = PodForms()
    first = pod("a", "1")
    made = forms.api("uid-a", first)
    assert made == to_api_dict(first)
    assert forms.api("uid-a", first) is made
    assert forms.conversions == 1
    second = pod("a", "2")
    again = forms.api("uid-a", second)
    assert again["metadata"]["resourceVersion"] == "2"
    assert forms.conversions == 2


def test_an_equal_but_newly_decoded_object_is_a_new_version() -> None:
    # The informer decodes a new object per watch event: identity, not equality, decides.
    forms = PodForms()
    forms.api("uid-a", pod("a", "1"))
    forms.api("uid-a", pod("a", "1"))
    assert forms.conversions == 2


def test_keep_only_drops_the_pods_the_queue_no_longer_holds() -> None:
    forms = PodForms()
    a, b = pod("a", "1"), pod("b", "1")
    forms.api("uid-a", a)
    forms.api("uid-b", b)
    forms.keep_only({"uid-b"})
    assert len(forms) == 1
    forms.api("uid-b", b)
    assert forms.conversions == 2
    forms.api("uid-a", a)
    assert forms.conversions == 3


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
