"""Coscheduling's queueing hint: a pod event helps a waiting gang only when the pod is one
of its members; node events (room for minResources) always may."""

from kubesalvo.core.plugins.coscheduling.hint import queueing_hint
from kubesalvo.core.plugins.framework import NODE_ADD, ActionType, ClusterEvent, EventResource
from tests.core.pernode.hint_fixtures import node, other, pod

POD_ADD = ClusterEvent(EventResource.POD, ActionType.ADD)


def member(group: str):
    made = pod()
    made.metadata.labels = {"podGroup": group, "minAvailable": "2"}
    return made


def test_a_pod_event_helps_a_gang_only_for_its_own_members():
    waiting = member("train")
    assert queueing_hint(waiting, POD_ADD, None, other("m2", {"podGroup": "train"}))
    assert not queueing_hint(waiting, POD_ADD, None, other("x", {"podGroup": "eval"}))
    assert not queueing_hint(waiting, POD_ADD, None, other("solo", {}))


def test_a_pod_on_its_own_and_node_events_always_queue():
    assert queueing_hint(pod(), POD_ADD, None, other("x", {"podGroup": "eval"}))
    assert queueing_hint(member("train"), NODE_ADD, None, node())
