"""NodeUnschedulable's filter mask: cordoned nodes, unless the pod tolerates the cordon."""

from kubesalvo.core.pernode.node_unschedulable import NodeUnschedulable
from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.pernode.static_plugins import _Nodes, _OnePod
from kubesalvo.core.plugins import node_unschedulable, registry

NODES = [
    NodeInfo.of({"metadata": {"name": "open"}, "spec": {}}),
    NodeInfo.of({"metadata": {"name": "cordoned"}, "spec": {"unschedulable": True}}),
]
TOLERATIONS = [
    [],
    [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}],
    [{"operator": "Exists"}],
    [{"key": "node.kubernetes.io/unschedulable", "effect": "NoExecute", "operator": "Exists"}],
    [{"key": "other", "operator": "Exists"}],
]


def test_its_mask_is_registered_under_its_reason():
    (mask,) = registry.PLUGINS[node_unschedulable.NAME].filter_masks
    assert mask is node_unschedulable.FILTER_MASK
    assert mask.reason == node_unschedulable.ERR_REASON_UNSCHEDULABLE and mask.signature


def test_the_mask_fails_cordoned_nodes_as_the_per_node_plugin_does():
    for tolerations in TOLERATIONS:
        pod = {"metadata": {"name": "p"}, "spec": {"tolerations": tolerations}}
        failing = node_unschedulable.cordoned(None, _Nodes(NODES), _OnePod.of(pod))
        per_node = NodeUnschedulable(pod)
        expected = [per_node.filter(n) is not None for n in NODES]
        assert (failing is not None and failing.tolist()) == (any(expected) and expected)


def test_no_cordoned_node_fails_none():
    pod = _OnePod.of({"metadata": {"name": "p"}, "spec": {}})
    assert node_unschedulable.cordoned(None, _Nodes(NODES[:1]), pod) is None
