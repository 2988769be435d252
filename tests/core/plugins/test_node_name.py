"""NodeName's filter mask: every node but the one the pod names."""

from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.pernode.static_plugins import _Nodes, _OnePod
from kubesalvo.core.plugins import node_name, registry

NODES = _Nodes([NodeInfo.of({"metadata": {"name": n}}) for n in ("a", "b", "c")])


def _pod(**spec):
    return _OnePod.of({"metadata": {"name": "p"}, "spec": spec})


def test_its_mask_is_registered_under_its_reason():
    (mask,) = registry.PLUGINS[node_name.NAME].filter_masks
    assert mask is node_name.FILTER_MASK
    assert mask.reason == node_name.ERR_REASON_NODE_NAME and mask.signature


def test_a_pod_naming_a_node_fails_every_other_node():
    assert node_name.other_nodes(None, NODES, _pod(nodeName="b")).tolist() == [True, False, True]
    # a node that does not exist: every node fails
    assert node_name.other_nodes(None, NODES, _pod(nodeName="x")).tolist() == [True] * 3


def test_a_pod_naming_no_node_fails_none():
    assert node_name.other_nodes(None, NODES, _pod()) is None
    assert node_name.other_nodes(None, NODES, _pod(nodeName="")) is None
