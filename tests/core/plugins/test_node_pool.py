"""NodePool, the example plugin: nodes of a pool take only that pool's pods, through the
encoder's static filter hook and the kernel."""

import pytest

from kubesalvo.core.place import place_burst, plan
from kubesalvo.core.plugins import registry
from kubesalvo.core.plugins.framework import ProfileError
from kubesalvo.core.plugins.node_pool import ERR_REASON_NODE_POOL, NodePoolArgs
from kubesalvo.core.profile import Profile
from kubesalvo.core.state import ClusterState

POOL = "kubesalvo.io/pool"


def node(name, pool=None, cpu="4"):
    labels = {"kubernetes.io/hostname": name}
    if pool:
        labels[POOL] = pool
    allocatable = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable}}


def pod(name, pool=None, cpu="1"):
    labels = {POOL: pool} if pool else {}
    container = {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels},
        "spec": {"containers": [container]},
    }


def cluster(*nodes):
    state = ClusterState()
    for n in nodes:
        state.add_node(n)
    return state


def with_node_pool(args=None):
    filters = (*registry.DEFAULT_FILTER_ORDER, "NodePool")
    plugin_args = (("NodePool", args),) if args else ()
    return Profile(filters=filters, plugin_args=plugin_args)


def test_pool_nodes_take_only_their_pools_pods_and_plain_pods_stay_off_them():
    state = cluster(node("gpu-0", "gpu"), node("plain-0"), node("tpu-0", "tpu"))
    pods = [pod("trainer", "gpu", cpu="3"), pod("web", cpu="3"), pod("infer", "tpu", cpu="3")]
    result = place_burst(state, pods, with_node_pool())
    assert result.nodes == ["gpu-0", "plain-0", "tpu-0"]
    # Without the plugin the trainer goes wherever resource scoring says.
    assert plan(cluster(node("a", "gpu", cpu="1"), node("b")), [pod("t", "gpu")]).nodes == ["b"]


def test_a_pod_whose_pool_is_full_or_missing_is_rejected_by_node_pool():
    state = cluster(node("gpu-0", "gpu", cpu="1"), node("plain-0"), node("plain-1"))
    result = plan(state, [pod("big", "gpu", cpu="2"), pod("lost", "fpga")], with_node_pool())
    assert result.nodes == [None, None]
    assert result.reason_counts[0] == {ERR_REASON_NODE_POOL: 2, "Insufficient cpu": 1}
    assert result.rejectors[0] == {"NodePool", "NodeResourcesFit"}
    assert result.reason_counts[1] == {ERR_REASON_NODE_POOL: 3}
    assert result.rejectors[1] == {"NodePool"}
    assert result.messages[1] == (
        "0/3 nodes are available: 3 node(s) didn't match the pod's node pool."
    )


def test_the_label_key_is_an_arg():
    state = cluster(node("a"), node("b"))
    state.add_node(
        {
            "metadata": {"name": "c", "labels": {"example.com/team": "red"}},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
        }
    )
    red = pod("r")
    red["metadata"]["labels"] = {"example.com/team": "red"}
    profile = with_node_pool(NodePoolArgs(label="example.com/team"))
    assert plan(state, [red], profile).nodes == ["c"]


def test_args_are_checked():
    with pytest.raises(ProfileError, match="label"):
        NodePoolArgs(label="not a/label/key")
    with pytest.raises(ProfileError, match="Required"):
        NodePoolArgs(label="")
