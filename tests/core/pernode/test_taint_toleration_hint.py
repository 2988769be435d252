"""TaintToleration's queueing hint: which cluster events can help a pod it rejected."""

from __future__ import annotations

from kubesalvo.core.pernode.taint_toleration_hint import queueing_hint as taint_toleration_hint
from kubesalvo.core.plugins.framework import NODE_ADD, ActionType, ClusterEvent, EventResource
from tests.core.pernode.hint_fixtures import models, node, pod


def test_taint_toleration_queues_when_the_pod_tolerates_the_node() -> None:
    gpu_taint = models.Taint(key="dedicated", value="gpu", effect="NoSchedule")
    tainted = node(taints=[gpu_taint])
    assert not taint_toleration_hint(pod(), NODE_ADD, None, tainted)
    tolerant = pod(tolerations=[models.Toleration(key="dedicated", operator="Exists")])
    assert taint_toleration_hint(tolerant, NODE_ADD, None, tainted)
    soft = node(taints=[models.Taint(key="x", effect="PreferNoSchedule")])
    assert taint_toleration_hint(pod(), NODE_ADD, None, soft)
    taint_update = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)
    assert taint_toleration_hint(pod(), taint_update, tainted, node())
