"""NodeLabelPreference, the example static score: its args, its arithmetic, and the same
totals from the encoder and kernel as from the reference (which runs the plugin's own
function over one pod's nodes), alone and beside the default scores. Also the static
filter's example, NodePool, inside DefaultPreemption's dry run."""

from __future__ import annotations

import pytest

from kubesalvo.core.place import plan
from kubesalvo.core.plugins import registry
from kubesalvo.core.plugins.framework import ArgsError, PluginSpec
from kubesalvo.core.plugins.node_label_preference import NodeLabelPreferenceArgs
from kubesalvo.core.preemption import PreemptionArgs, preempt
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler
from tests.helpers.reference import kernel_choices, state_of

SSD = "example.com/ssd"
SPOT = "example.com/spot"


def node(name, cpu="4", **labels):
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def pod(name, cpu="1", priority=0, on=None, labels=None):
    spec = {
        "priority": priority,
        "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}],
    }
    if on:
        spec["nodeName"] = on
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels or {}},
        "spec": spec,
        "status": {"startTime": "2026-01-01T00:00:00Z"} if on else {},
    }


def profile(weight, args, *, defaults=False):
    scores = (("NodeLabelPreference", weight),)
    if defaults:
        scores = (*Profile.default().scores, *scores)
    return Profile(scores=scores, plugin_args=(("NodeLabelPreference", args),))


def test_args_need_a_key_and_refuse_bad_duplicate_or_contradictory_ones():
    with pytest.raises(ArgsError) as empty:
        NodeLabelPreferenceArgs(absent=())
    assert str(empty.value.problems[0]) == "present: Required value: name at least one label key"
    with pytest.raises(ArgsError) as bad:
        NodeLabelPreferenceArgs(present=("a", "a", "-x"), absent=("a",))
    assert [p.path for p in bad.value.problems] == ["present[1]", "present[2]", "absent[0]"]


def test_a_node_meeting_every_preference_scores_100_and_each_share_counts():
    fleet = [
        node("both", **{SSD: "1"}),  # has ssd, is not spot: 2 of 2
        node("spot-ssd", **{SSD: "1", SPOT: "true"}),  # 1 of 2
        node("plain"),  # 1 of 2
        node("spot", **{SPOT: "true"}),  # 0 of 2
    ]
    args = NodeLabelPreferenceArgs(present=(SSD,), absent=(SPOT,))
    reference = ReferenceScheduler(fleet, profile=profile(3, args))
    totals = {n: s["NodeLabelPreference"] for n, s in reference.scores(pod("p")).items()}
    assert totals == {"both": 300, "spot-ssd": 150, "plain": 150, "spot": 0}
    assert plan(state_of(fleet), [pod("p")], profile(3, args)).nodes == ["both"]


@pytest.mark.parametrize("defaults", [False, True], ids=["alone", "beside-defaults"])
def test_the_kernel_places_a_burst_as_the_reference_does(defaults):
    fleet = [
        node("a", cpu="2", **{SSD: "1"}),
        node("b", cpu="8"),
        node("c", cpu="4", **{SSD: "1", SPOT: "true"}),
        node("d", cpu="3", **{SPOT: "true"}),
    ]
    burst = [pod(f"p{i}", cpu="1") for i in range(12)]
    chosen = profile(5, NodeLabelPreferenceArgs(present=(SSD,), absent=(SPOT,)), defaults=defaults)
    result = plan(state_of(fleet), burst, chosen)
    expected = ReferenceScheduler(fleet, profile=chosen).place_burst(
        burst, choose=kernel_choices(result, burst)
    )
    assert [r.node for r in expected] == result.nodes
    assert [r.message for r in expected] == result.messages
    assert None not in result.nodes  # 12 cpus asked of 17
    assert result.nodes[0] == "a"  # the only node meeting both preferences


def test_without_args_nodes_labelled_avoid_are_the_last_choice():
    fleet = [node("avoided", cpu="8", **{"kubesalvo.io/avoid": ""}), node("small", cpu="2")]
    defaults = Profile(scores=(*Profile.default().scores, ("NodeLabelPreference", 3)))
    assert plan(state_of(fleet), [pod("p")], defaults).nodes == ["small"]
    assert plan(state_of(fleet), [pod("p")]).nodes == ["avoided"]  # the most room


def test_a_static_score_must_implement_the_score_point():
    spec = registry.PLUGINS["NodeLabelPreference"]
    with pytest.raises(ValueError, match="must implement the score point"):
        PluginSpec(spec.name, frozenset({"filter"}), static_score=spec.static_score)


def test_preemption_sees_a_static_filter_plugin():
    """NodePool beside DefaultPreemption: the dry run runs NodePool's own filter, so a
    pool pod preempts on its pool's node (it used to raise there, and preemption was
    silently off for the profile)."""
    fleet = [node("gpu-0", cpu="2", **{"kubesalvo.io/pool": "gpu"}), node("plain-0", cpu="8")]
    low = pod("low", cpu="2", on="gpu-0", labels={"kubesalvo.io/pool": "gpu"})
    high = pod("high", cpu="2", priority=100, labels={"kubesalvo.io/pool": "gpu"})
    pooled = Profile(filters=(*registry.DEFAULT_FILTER_ORDER, "NodePool"))
    result = plan(state_of(fleet, [low]), [high], pooled)
    assert result.nodes == [None]
    decision = preempt(high, fleet, [low], profile=pooled, args=PreemptionArgs(10, 100))
    assert decision.node == "gpu-0"
    assert [v["metadata"]["name"] for v in decision.victims] == ["low"]
