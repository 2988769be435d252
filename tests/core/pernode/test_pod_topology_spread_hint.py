"""PodTopologySpread's queueing hint: which cluster events can help a pod it rejected."""

from __future__ import annotations

from kubesalvo.core.pernode.pod_topology_spread_hint import (
    queueing_hint as pod_topology_spread_hint,
)
from kubesalvo.core.plugins.framework import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    EventResource,
)
from tests.core.pernode.hint_fixtures import POD_ADD, POD_LABEL, node, other, pod, spread


def test_pod_topology_spread_queues_for_selected_pods_in_its_namespace() -> None:
    web = spread()
    assert pod_topology_spread_hint(web, ASSIGNED_POD_DELETE, other("w", {"app": "web"}), None)
    assert not pod_topology_spread_hint(web, ASSIGNED_POD_DELETE, other("d", {"app": "db"}), None)
    assert not pod_topology_spread_hint(
        web, POD_ADD, None, other("w", {"app": "web"}, namespace="prod")
    )
    assert pod_topology_spread_hint(web, POD_LABEL, other("x", {}), other("x", {"app": "web"}))
    assert not pod_topology_spread_hint(web, POD_LABEL, other("x", {}), other("x", {"a": "b"}))


def test_pod_topology_spread_queues_for_nodes_with_its_topology_keys() -> None:
    web = spread()
    zoned = node(labels={"topology.kubernetes.io/zone": "a"})
    assert pod_topology_spread_hint(web, NODE_ADD, None, zoned)
    assert not pod_topology_spread_hint(web, NODE_ADD, None, node())
    relabel = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)
    moved = node(labels={"topology.kubernetes.io/zone": "b"})
    assert pod_topology_spread_hint(web, relabel, zoned, moved)
    other_label = node(labels={"topology.kubernetes.io/zone": "a", "x": "y"})
    assert not pod_topology_spread_hint(web, relabel, zoned, other_label)


def test_pod_topology_spread_without_own_constraints_always_queues() -> None:
    assert pod_topology_spread_hint(pod(), NODE_ADD, None, node())
