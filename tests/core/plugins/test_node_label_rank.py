"""NodeLabelRank, the example normalised score: its args, its raw values, normalised by
the kernel over each pod's feasible nodes exactly as the reference normalises them (the
per-node evaluator runs the module's own function), alone and beside the default scores
(NodeAffinity's preferred terms and TaintToleration's PreferNoSchedule taints varying too),
through the kernel's every placement path."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core.encode import Encoder
from kubesalvo.core.place import plan
from kubesalvo.core.plugins import names, registry
from kubesalvo.core.plugins.framework import ArgsError, Normalise
from kubesalvo.core.plugins.node_label_rank import NodeLabelRankArgs, ranks
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler
from tests.core import test_place_vs_reference as scenario
from tests.helpers.reference import assert_same_outcomes, kernel_choices, state_of

GEN = "example.com/generation"


def node(name, cpu="4", zone="z1", soft_taint=False, **labels):
    base = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}
    made = {
        "metadata": {"name": name, "labels": {**base, **labels}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }
    if soft_taint:
        made["spec"] = {"taints": [{"key": "spot", "value": "", "effect": "PreferNoSchedule"}]}
    return made


def pod(name, cpu="1", app="web", spread="", prefer=""):
    spec = {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}]}
    if spread:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": spread,
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    if prefer:  # a preferred node affinity term: NodeAffinity's score varies too
        term = {
            "matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [prefer]}
            ]
        }
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 7, "preference": term}
                ]
            }
        }
    meta = {"name": name, "namespace": "ns", "uid": name, "labels": {"app": app}}
    return {"metadata": meta, "spec": spec}


ARGS = NodeLabelRankArgs(key=GEN, values=("5", "4", "3"))


def profile(weight=2, *, defaults=False):
    """NodeLabelRank alone, or beside every default score (NodeAffinity's MAX channel and
    TaintToleration's REVERSE_MAX one hold the kernel's lanes: it is an extra channel)."""
    scores: tuple[tuple[str, int], ...] = ((names.NODE_LABEL_RANK, weight),)
    if defaults:
        scores = (*Profile.default().scores, *scores)
    return Profile(scores=scores, plugin_args=((names.NODE_LABEL_RANK, ARGS),))


def test_args_need_a_valid_key_and_distinct_valid_values():
    assert NodeLabelRankArgs().values == ("high", "medium", "low")
    with pytest.raises(ArgsError) as bad:
        NodeLabelRankArgs(key="-bad", values=("a", "a", "no spaces"))
    assert [p.path for p in bad.value.problems] == ["key", "values[1]", "values[2]"]
    with pytest.raises(ArgsError, match="values: Required value"):
        NodeLabelRankArgs(values=())


def test_raw_values_rank_the_label_values_best_first():
    fleet = [node("g5", **{GEN: "5"}), node("g3", **{GEN: "3"}), node("g9", **{GEN: "9"})]
    fleet.append(node("none"))
    enc = Encoder(state_of(fleet), profile())
    (cid,) = enc.classify([pod("p")]).tolist()
    assert ranks(ARGS, enc, enc.classes[cid]).tolist() == [3, 1, 0, 0]
    assert registry.PLUGINS[names.NODE_LABEL_RANK].score_channel.normalise is Normalise.MAX


def test_scores_are_normalised_over_the_feasible_nodes():
    """The best rank a pod can use scores 100: a full gen-5 node does not count."""
    fleet = [node("g5-full", cpu="1", **{GEN: "5"}), node("g4", **{GEN: "4"})]
    fleet += [node("g3", **{GEN: "3"}), node("none")]
    reference = ReferenceScheduler(fleet, profile=profile(2))
    totals = {n: s[names.NODE_LABEL_RANK] for n, s in reference.scores(pod("p", cpu="2")).items()}
    assert totals == {"g4": 200, "g3": 100, "none": 0}  # 100 * 2 // 2, 100 * 1 // 2, 0
    assert plan(state_of(fleet), [pod("p", cpu="2")], profile(2)).nodes == ["g4"]


@pytest.mark.parametrize(
    "spread", ["", "ScheduleAnyway", "DoNotSchedule"], ids=["plain", "soft-zone", "hard-zone"]
)
@pytest.mark.parametrize("defaults", [False, True], ids=["alone", "beside-defaults"])
def test_the_kernel_places_a_burst_as_the_reference_does(defaults, spread):
    """Classes of many pods (the slot's max-tree, the zone layout, passes per pod when the
    spread is hard), one-pod classes (the fused scan), pods that prefer a zone and nodes
    with a PreferNoSchedule taint: every total and tie count as the reference's."""
    fleet = [
        node("a", cpu="2", zone="z1", **{GEN: "5"}),
        node("b", cpu="8", zone="z1", soft_taint=True),
        node("c", cpu="4", zone="z2", **{GEN: "4"}),
        node("d", cpu="3", zone="z2", soft_taint=True, **{GEN: "3"}),
        node("e", cpu="2", zone="z3", **{GEN: "5"}),
        node("f", cpu="4", zone="z3"),
    ]
    burst = [pod(f"p{i}", cpu="1", spread=spread) for i in range(10)]
    burst += [pod(f"q{i}", cpu="1", app="q", spread=spread, prefer="z2") for i in range(6)]
    burst += [pod("big", cpu="3", app="big", spread=spread)]  # a class of one pod
    burst += [pod("one", cpu="2", app="one", spread=spread, prefer="z1")]
    chosen = profile(3, defaults=defaults)
    result = plan(state_of(fleet), burst, chosen)
    expected = ReferenceScheduler(fleet, profile=chosen).place_burst(
        burst, choose=kernel_choices(result, burst)
    )
    assert [r.node for r in expected] == result.nodes
    assert [r.message for r in expected] == result.messages


def test_beside_the_default_scores_the_rank_still_decides_between_equal_nodes():
    fleet = [node("g4", **{GEN: "4"}), node("g5", **{GEN: "5"}), node("none")]
    assert plan(state_of(fleet), [pod("p")], profile(1, defaults=True)).nodes == ["g5"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios=st.data())
def test_random_bursts_beside_the_default_scores_match_the_reference(scenarios):
    """The reference property scenarios (spread, inter-pod terms, taints, node affinity,
    gangs, ports, bound pods), scored with NodeLabelRank as an extra MAX channel beside
    NodeAffinity's: the kernel's placements, totals and ties are the reference's."""
    cluster = scenarios.draw(scenario.nodes())
    names_ = [n["metadata"]["name"] for n in cluster]
    bound = scenarios.draw(scenario.pods("bound", 6, node_names=names_))
    burst = scenarios.draw(scenario.pods("p", 10))
    args = NodeLabelRankArgs(key="gen", values=("7", "5", "3"))
    chosen = Profile(
        scores=(*Profile.default().scores, (names.NODE_LABEL_RANK, 2)),
        plugin_args=((names.NODE_LABEL_RANK, args),),
    )
    state = state_of(cluster, bound)
    for namespace in scenario.NAMESPACES:
        state.set_namespace(namespace["metadata"]["name"], namespace["metadata"]["labels"])
    result = plan(state, burst, chosen, workloads=scenario.WORKLOADS)
    reference = ReferenceScheduler(cluster, bound, scenario.NAMESPACES, chosen, scenario.WORKLOADS)
    expected = reference.place_burst(burst, choose=kernel_choices(result, burst))
    assert_same_outcomes(result, expected)
