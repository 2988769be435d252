"""NodeUnschedulable's queueing hint: which cluster events can help a pod it rejected."""

from __future__ import annotations

from kubesalvo.core.pernode.node_unschedulable_hint import queueing_hint as node_unschedulable_hint
from kubesalvo.core.plugins.framework import NODE_ADD, ActionType, ClusterEvent, EventResource
from tests.core.pernode.hint_fixtures import models, node, pod


def test_node_unschedulable_queues_for_uncordoned_nodes() -> None:
    cordon = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)
    assert not node_unschedulable_hint(pod(), NODE_ADD, None, node(unschedulable=True))
    assert node_unschedulable_hint(pod(), cordon, node(unschedulable=True), node())
    assert not node_unschedulable_hint(pod(), cordon, node(), node(labels={"a": "b"}))
    cordon_tolerant = pod(
        tolerations=[models.Toleration(key="node.kubernetes.io/unschedulable", operator="Exists")]
    )
    assert node_unschedulable_hint(cordon_tolerant, NODE_ADD, None, node(unschedulable=True))
