"""NodeAffinity's queueing hint: which cluster events can help a pod it rejected."""

from __future__ import annotations

from kubesalvo.core.pernode.node_affinity_hint import queueing_hint as node_affinity_hint
from kubesalvo.core.plugins.framework import NODE_ADD, ActionType, ClusterEvent, EventResource
from tests.core.pernode.hint_fixtures import node, pod


def test_node_affinity_queues_for_a_node_that_starts_matching() -> None:
    p = pod(node_selector={"pool": "gpu"})
    assert node_affinity_hint(p, NODE_ADD, None, node(labels={"pool": "gpu"}))
    assert not node_affinity_hint(p, NODE_ADD, None, node(labels={"pool": "cpu"}))
    relabel = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)
    cpu, gpu = node(labels={"pool": "cpu"}), node(labels={"pool": "gpu"})
    assert node_affinity_hint(p, relabel, cpu, gpu)
    # Matched before and after: the change is not what kept the pod out.
    assert not node_affinity_hint(p, relabel, gpu, node(labels={"pool": "gpu", "x": "y"}))
