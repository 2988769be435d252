"""The queue and the plugins' queueing hints: it asks a parked pod's rejecting plugins'
hints (the registry's, by default) and retries the pod when a hint fails. The hints
themselves are tested beside their modules (tests/core/pernode/test_*_hint.py)."""

from __future__ import annotations

from typing import Any

from kubesalvo.sched.queue import NODE_ADD, QueueName
from tests.core.pernode.hint_fixtures import CLAIM_UPDATE, claiming_pod, node, pod, resource_claim
from tests.helpers.queue import make_queue


def test_queue_uses_the_hints_by_default() -> None:
    q, clock = make_queue()
    q.add(pod("8"))
    (qp,) = q.pop_burst(1)
    q.add_unschedulable(qp, ["NodeResourcesFit"])
    clock.step(60)
    assert q.on_event(NODE_ADD, None, node("4")) == 0
    assert q.where("uid-p") is QueueName.UNSCHEDULABLE
    assert q.on_event(NODE_ADD, None, node("16")) == 1
    assert q.where("uid-p") is QueueName.ACTIVE


def test_a_failing_hint_retries_the_pod() -> None:
    def broken(*_: Any) -> bool:
        raise RuntimeError("boom")

    q, clock = make_queue(hints={"NodeAffinity": broken})
    q.add(pod())
    (qp,) = q.pop_burst(1)
    q.add_unschedulable(qp, ["NodeAffinity"])
    clock.step(60)
    assert q.on_event(NODE_ADD, None, node()) == 1


def test_a_parked_pod_with_claims_wakes_for_its_claim_not_for_others() -> None:
    q, _ = make_queue()
    q.add(claiming_pod())
    (qp,) = q.pop_burst(1)
    q.add_unschedulable(qp, ["DynamicResources"])
    assert q.on_event(CLAIM_UPDATE, resource_claim("x", True), resource_claim("x", True)) == 0
    assert q.where("uid-p") is QueueName.UNSCHEDULABLE
    assert q.on_event(CLAIM_UPDATE, resource_claim("mine"), resource_claim("mine", True)) == 1
