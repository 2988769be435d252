"""The queue and the plugins' queueing hints: it asks a parked pod's rejecting plugins'
hints (the registry's, by default), retries the pod when a hint fails, and gives the hints
pods' API dicts from the runtime's memo (``pod_api``), one conversion per pod version. The
hints themselves are tested beside their modules (tests/core/pernode/test_*_hint.py)."""

from __future__ import annotations

from typing import Any

from kubesalvo.sched.informers import ADDED, DELETED, MODIFIED, Store, models, to_api_dict
from kubesalvo.sched.informers.forms import PodForms
from kubesalvo.sched.queue import ASSIGNED_POD_DELETE, NODE_ADD, QueueName
from kubesalvo.sched.queue.cluster_events import pod_update_events
from tests.core.pernode.hint_fixtures import CLAIM_UPDATE, claiming_pod, node, pod, resource_claim
from tests.helpers.queue import make_pod, make_queue


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


def _wants_buddy(name: str, cpu: str) -> models.Pod:
    """A pending pod (its own shape: a group of its own) whose required pod affinity
    wants a pod labelled ``buddy=x`` on its node."""
    made = make_pod(name, cpu=cpu)
    term = models.PodAffinityTerm(
        label_selector=models.LabelSelector(match_labels={"buddy": "x"}),
        topology_key="kubernetes.io/hostname",
    )
    made.spec.affinity = models.Affinity(
        pod_affinity=models.PodAffinity(required_during_scheduling_ignored_during_execution=[term])
    )
    return made


def _placed(version: str, labels: dict[str, str], cpu: str = "100m") -> models.Pod:
    made = make_pod("placed", cpu=cpu, labels=labels)
    made.metadata.resource_version = version
    made.spec.node_name = "n1"
    return made


def test_the_hints_read_pods_from_the_runtimes_memo_once_per_version() -> None:
    # As the runtime feeds them: the queue's handler first, then the memo's.
    store: Store[models.Pod] = Store()
    converted: list[tuple[str, str]] = []

    def counted(obj: Any) -> dict[str, Any]:
        converted.append((obj.metadata.name, obj.metadata.resource_version))
        return to_api_dict(obj)

    forms = PodForms(convert=counted, current=store.get)
    q, clock = make_queue(pod_api=forms.api)

    def informed(kind: str, obj: models.Pod) -> None:
        for change in store.apply_event(kind, obj):
            if change.obj is not None and change.obj.spec.node_name:
                if change.type == DELETED:
                    q.on_event(ASSIGNED_POD_DELETE, change.obj, None)
                elif change.old is not None:
                    for ev in pod_update_events(change.old, change.obj, forms.api):
                        q.on_event(ev, change.old, change.obj)
            forms.on_pod(change)

    waiting = [_wants_buddy(f"w{i}", f"{i + 1}00m") for i in range(3)]
    for obj in waiting:
        informed(ADDED, obj)
        q.add(obj)
    for qp in q.pop_burst(3):
        q.add_unschedulable(qp, ["InterPodAffinity"])
    clock.step(60)
    informed(ADDED, _placed("1", {"app": "a"}))
    informed(MODIFIED, _placed("2", {"app": "b"}))  # asked of every group: no buddy yet
    assert [q.where(f"uid-w{i}") for i in range(3)] == [QueueName.UNSCHEDULABLE] * 3
    informed(MODIFIED, _placed("3", {"app": "b"}, cpu="50m"))  # scaled down: requests read
    informed(MODIFIED, _placed("4", {"buddy": "x"}))
    assert [q.where(f"uid-w{i}") for i in range(3)] == [QueueName.ACTIVE] * 3
    assert len(set(converted)) == len(converted), f"a version converted twice: {converted}"
    assert {("placed", v) for v in "1234"} <= set(converted)
    assert {(f"w{i}", "") for i in range(3)} <= set(converted)
    assert forms.conversions == len(converted)
