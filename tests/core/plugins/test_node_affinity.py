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
