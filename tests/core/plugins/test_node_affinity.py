"""NodeAffinityArgs: the added affinity's terms must parse."""

import pytest

from kubesalvo.core.plugins.framework import ProfileError
from kubesalvo.core.plugins.node_affinity import NodeAffinityArgs


def test_added_affinity_terms_must_parse():
    bad = {"key": "size", "operator": "Gt", "values": ["big"]}
    required = {"nodeSelectorTerms": [{"matchExpressions": [bad]}]}
    with pytest.raises(ProfileError, match="requiredDuringScheduling") as err:
        NodeAffinityArgs({"requiredDuringSchedulingIgnoredDuringExecution": required})
    assert "nodeSelectorTerms[0]" in err.value.path
    preferred = [{"weight": 1, "preference": {"matchExpressions": [bad]}}]
    with pytest.raises(ProfileError, match="preferredDuringScheduling"):
        NodeAffinityArgs({"preferredDuringSchedulingIgnoredDuringExecution": preferred})
    good = {"key": "size", "operator": "Gt", "values": ["8"]}
    NodeAffinityArgs(
        {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [good]}]
            }
        }
    )


def _encoder(*nodes):
    from kubesalvo.core.encode import Encoder
    from kubesalvo.core.profile import Profile
    from kubesalvo.core.state import ClusterState

    state = ClusterState()
    for name, labels in nodes:
        state.add_node(
            {
                "metadata": {"name": name, "labels": labels},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
            }
        )
    return Encoder(state, Profile.default())


def _pod(*preferred):
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    return {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c"}], "affinity": affinity},
    }


def _term(weight, key, *values, field=False):
    requirement = {"key": key, "operator": "In", "values": list(values)}
    kind = "matchFields" if field else "matchExpressions"
    return {"weight": weight, "preference": {kind: [requirement]}}


def test_its_channel_is_registered_normalised_by_max():
    from kubesalvo.core.plugins import node_affinity, registry
    from kubesalvo.core.plugins.framework import Normalise

    spec = registry.PLUGINS[node_affinity.NAME]
    assert spec.score_channel is node_affinity.SCORE_CHANNEL
    assert spec.score_channel.normalise is Normalise.MAX


def test_raw_values_sum_the_weights_of_matching_preferred_terms_and_added_ones():
    from kubesalvo.core.plugins.node_affinity import preferred_weights

    enc = _encoder(("a", {"zone": "z1", "disk": "ssd"}), ("b", {"zone": "z2"}), ("c", {}))
    terms = (
        _term(5, "zone", "z1"),
        _term(3, "disk", "ssd"),
        _term(7, "metadata.name", "b", field=True),
    )
    ids = enc.classify([_pod(*terms)]).tolist()
    cls = enc.classes[ids[0]]
    assert preferred_weights(NodeAffinityArgs(), enc, cls).tolist() == [8, 7, 0]
    added = NodeAffinityArgs(
        {"preferredDuringSchedulingIgnoredDuringExecution": [_term(10, "zone", "z2")]}
    )
    assert preferred_weights(added, enc, cls).tolist() == [8, 17, 0]
    assert preferred_weights(None, enc, cls).tolist() == [8, 7, 0]


def test_the_normalised_channel_equals_the_per_node_plugin_score():
    """Normalised as a channel (by the largest sum), the raw sums give what the per-node
    NodeAffinity gives, added terms included."""
    from kubesalvo.core.pernode import node_affinity as per_node
    from kubesalvo.core.pernode.snapshot import NodeInfo
    from kubesalvo.core.pernode.static_plugins import channel_scores
    from kubesalvo.core.plugins import node_affinity, registry

    spec = registry.PLUGINS[node_affinity.NAME]
    infos = [
        NodeInfo.of({"metadata": {"name": name, "labels": labels}})
        for name, labels in (("a", {"zone": "z1"}), ("b", {"zone": "z2"}), ("c", {}))
    ]
    added = {"preferredDuringSchedulingIgnoredDuringExecution": [_term(10, "zone", "z2")]}
    for args in (NodeAffinityArgs(), NodeAffinityArgs(added)):
        for pod in (
            _pod(),
            _pod(_term(5, "zone", "z1"), _term(3, "metadata.name", "c", field=True)),
        ):
            expected = per_node.score(pod, infos, args.added_affinity)
            assert channel_scores(spec, args, pod, infos) == expected


def test_its_filter_masks_check_the_added_terms_then_the_pods_selector_and_terms():
    from kubesalvo.core.plugins import node_affinity, registry

    enc = _encoder(("a", {"zone": "z1", "disk": "ssd"}), ("b", {"zone": "z2"}), ("c", {}))
    required = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z2"]}]}
        ]
    }
    spec = {
        "containers": [{"name": "c"}],
        "nodeSelector": {"disk": "ssd"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
    }
    (cid,) = enc.classify([{"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}]).tolist()
    cls = enc.classes[cid]
    added, own = registry.PLUGINS[node_affinity.NAME].filter_masks
    assert added.reason == node_affinity.ERR_REASON_ENFORCED_NODE_AFFINITY
    assert own.reason == node_affinity.ERR_REASON_NODE_AFFINITY
    assert added.failing(NodeAffinityArgs(), enc, cls) is None  # the profile adds none
    by_name = {"key": "metadata.name", "operator": "In", "values": ["b"]}
    terms = {"nodeSelectorTerms": [{"matchFields": [by_name]}]}
    enforced = NodeAffinityArgs({"requiredDuringSchedulingIgnoredDuringExecution": terms})
    assert added.failing(enforced, enc, cls).tolist() == [True, False, True]
    assert own.failing(NodeAffinityArgs(), enc, cls).tolist() == [False, True, True]


def _named(*terms):
    """A pod whose required terms are ``terms``, each a list of metadata.name In lists (an
    empty list: a term naming no node by name)."""
    node_terms = []
    for names in terms:
        fields = [{"key": "metadata.name", "operator": "In", "values": v} for v in names]
        labels = [] if names else [{"key": "zone", "operator": "Exists"}]
        node_terms.append({"matchFields": fields, "matchExpressions": labels})
    required = {"nodeSelectorTerms": node_terms}
    return {
        "containers": [{"name": "c"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
    }


def test_its_prefilter_keeps_the_named_nodes_or_rejects_a_conflict():
    from kubesalvo.core.plugins import node_affinity, registry

    enc = _encoder(("a", {"zone": "z1"}), ("b", {"zone": "z2"}), ("c", {}))
    pre_filter = registry.PLUGINS[node_affinity.NAME].pre_filter
    assert pre_filter is node_affinity.NAMED_NODES and pre_filter.narrows

    def answer(spec):
        (cid,) = enc.classify([{"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}])
        return pre_filter.run(NodeAffinityArgs(), enc, enc.classes[cid])

    # the union over the terms of each term's intersection; an unknown name keeps no row
    kept = answer(_named([["a", "b"], ["b", "x"]], [["c"]]))
    assert kept.keep.tolist() == [False, True, True] and not kept.message
    # a term that names no node by name leaves every node to the filters
    assert answer(_named([["a"]], [])) is None
    assert answer({"containers": [{"name": "c"}]}) is None
    # a term whose fields name no node at once adds nothing to the union
    assert answer(_named([["a"], ["b"]], [["c"]])).keep.tolist() == [False, False, True]
    # and when no term names a node at all, the pod is rejected on every node
    conflict = answer(_named([["a"], ["b"]]))
    assert conflict.message == node_affinity.ERR_REASON_NODE_AFFINITY_CONFLICT
    assert conflict.keep is None


def test_placement_counts_the_nodes_its_prefilter_left_out_under_the_narrowing_reason():
    from kubesalvo.core.place import plan
    from kubesalvo.core.plugins import framework, names
    from kubesalvo.core.profile import Profile

    enc = _encoder(("a", {"zone": "z1"}), ("b", {"zone": "z2"}), ("c", {}))
    spec = _named([["b"]])
    spec["nodeSelector"] = {"zone": "z1"}
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "p"}, "spec": spec}
    result = plan(enc.state, [pod], Profile.default())
    assert result.nodes == [None]
    narrowed = framework.prefilter_narrowing_reason([names.NODE_AFFINITY])
    assert result.messages[0] == (
        f"0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        f"2 {narrowed}."
    )
