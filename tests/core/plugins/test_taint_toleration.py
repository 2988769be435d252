"""TaintToleration's score channel: untolerated PreferNoSchedule taints, reversed by max."""

import numpy as np

from kubesalvo.core.encode import Encoder
from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.pernode.static_plugins import _Nodes, _OnePod
from kubesalvo.core.plugins import registry, taint_toleration
from kubesalvo.core.plugins.framework import Normalise
from kubesalvo.core.profile import Profile
from kubesalvo.core.state import ClusterState


def node(name, *taints):
    return {
        "metadata": {"name": name, "labels": {}},
        "spec": {"taints": list(taints)},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def taint(key, effect="PreferNoSchedule", value=""):
    return {"key": key, "value": value, "effect": effect}


def pod(*tolerations):
    return {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c"}], "tolerations": list(tolerations)},
    }


FLEET = [
    node("two", taint("spot"), taint("old")),
    node("one", taint("spot")),
    node("hard", taint("gpu", "NoSchedule")),  # only the filter looks at it
    node("none"),
]


def encoder_classes(*pods):
    state = ClusterState()
    for n in FLEET:
        state.add_node(n)
    enc = Encoder(state, Profile.default())
    ids = enc.classify(list(pods)).tolist()
    return enc, [enc.classes[i] for i in ids]


def test_its_channel_is_registered_reversed_by_max():
    spec = registry.PLUGINS[taint_toleration.NAME]
    assert spec.score_channel is taint_toleration.SCORE_CHANNEL
    assert spec.score_channel.normalise is Normalise.REVERSE_MAX


def test_raw_values_count_the_untolerated_prefer_no_schedule_taints():
    spot = {"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}
    anything = {"operator": "Exists"}  # an empty key and effect tolerate every taint
    hard_only = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
    enc, (plain, tolerant, everything, wrong_effect) = encoder_classes(
        pod(), pod(spot), pod(anything), pod(hard_only)
    )
    raw = taint_toleration.untolerated_prefer_no_schedule
    assert raw(None, enc, plain).tolist() == [2, 1, 0, 0]
    assert raw(None, enc, tolerant).tolist() == [1, 0, 0, 0]
    assert raw(None, enc, everything).tolist() == [0, 0, 0, 0]
    assert raw(None, enc, wrong_effect).tolist() == [2, 1, 0, 0]


def test_the_per_node_table_gives_the_same_raw_values():
    """The oracle's table (one pod's nodes, read plainly) and the encoder's agree."""
    spot = {"key": "spot", "operator": "Equal", "value": "", "effect": "PreferNoSchedule"}
    enc, (cls,) = encoder_classes(pod(spot))
    nodes = _Nodes([NodeInfo.of(n) for n in FLEET])
    one = _OnePod.of(pod(spot))
    raw = taint_toleration.untolerated_prefer_no_schedule
    assert np.array_equal(raw(None, nodes, one), raw(None, enc, cls))


def test_tolerations_of_keys_no_node_has_leave_the_key_alone():
    """Pods differing only by tolerations of keys no taint has share one row of counts."""
    team = {"key": "team-a", "operator": "Exists"}
    enc, (plain, teamed) = encoder_classes(pod(), pod(team))
    key = taint_toleration.prefer_no_schedule_tolerations
    assert key(None, enc, plain) == key(None, enc, teamed) == []
    assert plain.rev_key == teamed.rev_key


def test_the_normalised_channel_equals_the_per_node_plugin_score():
    """Normalised as a channel (reversed by the largest count, 100 everywhere without
    one), the raw counts give what the per-node TaintToleration gives."""
    from kubesalvo.core.pernode import taint_toleration as per_node
    from kubesalvo.core.pernode.static_plugins import channel_scores

    spec = registry.PLUGINS[taint_toleration.NAME]
    spot = {"key": "spot", "operator": "Exists"}
    for nodes in (FLEET, FLEET[2:], FLEET[1:]):
        infos = [NodeInfo.of(n) for n in nodes]
        for p in (pod(), pod(spot)):
            assert channel_scores(spec, None, p, infos) == per_node.score(p, infos)


def test_its_filter_mask_fails_the_nodes_with_an_untolerated_hard_taint():
    fleet = [
        node("gpu", taint("gpu", "NoSchedule")),
        node("evict", taint("evict", "NoExecute")),
        node("soft", taint("spot")),  # PreferNoSchedule: only the score looks at it
        node("none"),
    ]
    state = ClusterState()
    for n in fleet:
        state.add_node(n)
    enc = Encoder(state, Profile.default())
    gpu = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    ids = enc.classify([pod(), pod(gpu), pod({"operator": "Exists"})]).tolist()
    plain, tolerant, everything = (enc.classes[i] for i in ids)
    (mask,) = registry.PLUGINS[taint_toleration.NAME].filter_masks
    assert mask is taint_toleration.FILTER_MASK
    assert mask.reason == taint_toleration.ERR_REASON_UNTOLERATED_TAINT
    assert mask.failing(None, enc, plain).tolist() == [True, True, False, False]
    assert mask.failing(None, enc, tolerant).tolist() == [False, True, False, False]
    assert mask.failing(None, enc, everything) is None  # no node fails: nothing to count
