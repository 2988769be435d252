"""BurstPacking in place_burst (core/burst_packing.py): the kernel's plan improved, then
placed through nominated nodes - fewer nodes, more pods when room is short, every pod on
a node that passes its filters, pods that depend on others kept where the kernel put
them, the result in the burst's order and the state assuming what was placed; on random
small fleets and bursts (and on the reference test's scenarios) every placement judged
feasible by tests/helpers/feasibility.py, no priority level served worse."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core.place import place_burst, plan
from kubesalvo.core.plugins.burst_packing import BurstPackingArgs
from kubesalvo.core.plugins.node_resources_fit import (
    NodeResourcesFitArgs,
    ScoringStrategy,
    ScoringStrategyType,
)
from kubesalvo.core.profile import Profile
from kubesalvo.core.results import merged
from kubesalvo.core.state import ClusterState
from tests.core import test_place_vs_reference as vs_reference
from tests.helpers.feasibility import placement_problems
from tests.helpers.reference import state_of

LEAST = Profile()
PACKED = dataclasses.replace(LEAST, packing=BurstPackingArgs())
MOVES_ONLY = dataclasses.replace(LEAST, packing=BurstPackingArgs(max_exact_pods=0))
MOST = Profile(
    fit=NodeResourcesFitArgs(
        scoring_strategy=ScoringStrategy(type=ScoringStrategyType.MOST_ALLOCATED)
    )
)


def node(name, cpu=4, labels=None, taints=None):
    out = {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints} if taints else {},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}},
    }
    return out


def pod(name, cpu="1", **spec):
    container = {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}
    labels = spec.pop("labels", {})
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels},
        "spec": {"containers": [container], **spec},
    }


def cluster(*nodes):
    state = ClusterState()
    for n in nodes:
        state.add_node(n)
    return state


def used(result):
    return {n for n in result.nodes if n is not None}


def test_a_spread_burst_lands_on_fewer_nodes():
    nodes = [node(f"n{i}") for i in range(4)]
    pods = [pod(f"p{i}") for i in range(8)]
    assert len(used(plan(cluster(*nodes), pods, LEAST))) == 4
    for profile in (PACKED, MOVES_ONLY):
        result = plan(cluster(*nodes), pods, profile)
        assert result.placed == 8 and len(used(result)) == 2
        assert result.packing_moved  # explain names these pods


def test_when_room_is_short_it_places_the_pods_greedy_strands():
    # MostAllocated stacks the three 1-cpu pods on one node; a 3-cpu pod is left out.
    nodes = [node(f"n{i}") for i in range(3)]
    pods = [pod(f"s{i}", "1") for i in range(3)] + [pod(f"l{i}", "3") for i in range(3)]
    assert plan(cluster(*nodes), pods, MOST).placed == 5
    result = plan(cluster(*nodes), pods, dataclasses.replace(MOST, packing=BurstPackingArgs()))
    assert result.placed == 6
    # The result is in the burst's order: each pod's message names it and its node.
    for p, node_name, message in zip(pods, result.nodes, result.messages, strict=True):
        assert f"ns/{p['metadata']['name']} to {node_name}" in message


def test_every_pod_lands_on_a_node_its_filters_pass():
    nodes = [
        node("a0", labels={"pool": "a"}),
        node("a1", labels={"pool": "a"}),
        node("b0", labels={"pool": "b"}),
        node("b1", labels={"pool": "b"}),
        node("t0", taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}]),
    ]
    pods = [pod(f"a{i}", nodeSelector={"pool": "a"}) for i in range(3)]
    pods += [pod(f"b{i}", nodeSelector={"pool": "b"}) for i in range(3)]
    pods += [pod(f"f{i}") for i in range(2)]
    for profile in (PACKED, MOVES_ONLY):
        result = plan(cluster(*nodes), pods, profile)
        assert result.placed == 8
        for p, where in zip(pods, result.nodes, strict=True):
            name = p["metadata"]["name"]
            assert where != "t0"
            if name[0] in "ab":
                assert where[0] == name[0]
        assert len(used(result)) < len(used(plan(cluster(*nodes), pods, LEAST)))


def test_pods_that_depend_on_other_pods_stay_where_the_kernel_put_them():
    nodes = [node(f"n{i}", labels={"zone": f"z{i}"}) for i in range(4)]
    spread = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "s"}},
            }
        ]
    }
    pods = [pod(f"s{i}", labels={"app": "s"}, **spread) for i in range(4)]
    pods += [pod(f"p{i}") for i in range(4)]
    greedy = plan(cluster(*nodes), pods, LEAST)
    result = plan(cluster(*nodes), pods, PACKED)
    assert result.nodes[:4] == greedy.nodes[:4]
    assert sorted(result.nodes[:4]) == ["n0", "n1", "n2", "n3"]
    assert result.placed == 8


def test_a_node_with_pods_from_before_takes_the_burst_first():
    state = cluster(*[node(f"n{i}") for i in range(3)])
    (held,) = place_burst(state, [pod("old", "1")], LEAST).nodes
    result = place_burst(state, [pod(f"p{i}") for i in range(3)], PACKED)
    assert set(result.nodes) == {held}


def test_the_state_assumes_the_packed_placements():
    state = cluster(*[node(f"n{i}") for i in range(4)])
    result = place_burst(state, [pod(f"p{i}") for i in range(8)], PACKED)
    assert len(used(result)) == 2
    cpu = state.resource_index["cpu"]
    for name in ("n0", "n1", "n2", "n3"):
        row = state.row_of[name]
        expected = 1000 * sum(1 for n in result.nodes if n == name)
        assert state.requested[row, cpu] == expected
    assert np.count_nonzero(state.requested[: state.rows, cpu]) == 2


def test_a_higher_priority_pod_gets_the_room_a_lower_one_would_have_taken():
    # One 4-cpu node, 3 cpu left after "first". In the order given (not sorted by
    # priority) the kernel lets the low 2-cpu pod take room the high 3-cpu one needed;
    # BurstPacking serves the higher priority first.
    nodes = [node("n0")]
    pods = [pod("first", "1"), pod("low-a", "2", priority=0), pod("high", "3", priority=100)]
    assert plan(cluster(*nodes), pods, LEAST).nodes == ["n0", "n0", None]
    result = plan(cluster(*nodes), pods, PACKED)
    assert result.nodes == ["n0", None, "n0"]
    assert result.packing_moved == {1: "n0", 2: None}


def test_a_pod_left_out_for_two_others_gets_the_kernels_failure_message():
    # One 4-cpu node: the kernel places the 4-cpu pod first; two 2-cpu pods of the same
    # priority fit instead, so BurstPacking places them and leaves the large one out.
    state = cluster(node("n0"))
    pods = [pod("large", "4"), pod("small-a", "2"), pod("small-b", "2")]
    result = place_burst(state, pods, PACKED)
    assert result.nodes == [None, "n0", "n0"]
    assert result.packing_moved == {0: "n0", 1: None, 2: None}
    assert "Insufficient cpu" in result.messages[0]
    assert state.requested[state.row_of["n0"], state.resource_index["cpu"]] == 4000


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vs_reference.scenarios(), st.booleans())
def test_packed_bursts_keep_every_placement_feasible_and_serve_no_level_worse(scenario, exact):
    # The reference test's random clusters and bursts (selectors, affinity, taints, ports,
    # spread, inter-pod terms, gangs), planned without and with BurstPacking; placements
    # are judged by tests/helpers/feasibility.py, independent of kubesalvo's code.
    cluster, bound, burst, profile = scenario
    packed = dataclasses.replace(
        profile, packing=BurstPackingArgs(max_exact_pods=500 if exact else 0)
    )
    judged_before = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in bound}
    # What the bound pods break already (the generator may overcommit) is not the burst's.
    known = set(placement_problems(bound, cluster, judged_before=judged_before))
    results = []
    for chosen in (profile, packed):
        state = state_of(cluster, bound)
        for namespace in vs_reference.NAMESPACES:
            state.set_namespace(namespace["metadata"]["name"], namespace["metadata"]["labels"])
        result = plan(state, burst, chosen, workloads=vs_reference.WORKLOADS)
        placed = [
            {**p, "spec": {**p["spec"], "nodeName": node}}
            for p, node in zip(burst, result.nodes, strict=True)
            if node is not None
        ]
        problems = placement_problems([*bound, *placed], cluster, judged_before=judged_before)
        results.append((result, set(problems)))
    (greedy, greedy_problems), (best, problems) = results
    # Anything the packed placement breaks, the kernel's own breaks too (the judge does
    # not tell a node overcommitted before the burst from one overcommitted after).
    assert problems <= greedy_problems | known
    levels = sorted({(p["spec"].get("priority") or 0) for p in burst}, reverse=True)
    for level in levels:
        at = [i for i, p in enumerate(burst) if (p["spec"].get("priority") or 0) == level]
        mine = sum(best.nodes[i] is not None for i in at)
        theirs = sum(greedy.nodes[i] is not None for i in at)
        if mine != theirs:
            assert mine > theirs
            break


@st.composite
def movable_bursts(draw):
    """Small fleets (sizes, pools, a taint, a cordon, pods from before) and bursts of
    mostly plain pods (a pool selector, a toleration, priorities, now and then a host
    port or a hard spread constraint): bursts BurstPacking moves pods of."""
    fleet = []
    for i in range(draw(st.integers(2, 7))):
        made = node(f"n{i}", cpu=draw(st.sampled_from([2, 4, 8])))
        made["metadata"]["labels"]["pool"] = draw(st.sampled_from(["a", "b"]))
        made["metadata"]["labels"]["zone"] = f"z{i % 2}"
        if draw(st.integers(0, 5)) == 0:
            made["spec"]["taints"] = [{"key": "gpu", "value": "x", "effect": "NoSchedule"}]
        if draw(st.integers(0, 7)) == 0:
            made["spec"]["unschedulable"] = True
        fleet.append(made)
    bound = []
    for i in range(draw(st.integers(0, 3))):
        old = pod(f"old{i}", draw(st.sampled_from(["500m", "1"])))
        old["spec"]["nodeName"] = f"n{draw(st.integers(0, len(fleet) - 1))}"
        bound.append(old)
    burst = []
    for i in range(draw(st.integers(1, 16))):
        spec = {"priority": draw(st.sampled_from([0, 0, 0, 100]))}
        if draw(st.booleans()):
            spec["nodeSelector"] = {"pool": draw(st.sampled_from(["a", "b"]))}
        if draw(st.integers(0, 3)) == 0:
            spec["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
        extra = draw(st.integers(0, 9))
        made = pod(f"p{i}", draw(st.sampled_from(["250m", "500m", "1", "1500m", "2", "3"])), **spec)
        if extra == 0:
            made["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80}]
        elif extra == 1:
            made["metadata"]["labels"] = {"app": "s"}
            made["spec"]["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "s"}},
                }
            ]
        burst.append(made)
    return fleet, bound, burst


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(movable_bursts(), st.booleans(), st.booleans())
def test_packed_small_bursts_stay_feasible_and_use_no_more_nodes(case, exact, most):
    fleet, bound, burst = case
    base = MOST if most else LEAST
    packed = dataclasses.replace(
        base, packing=BurstPackingArgs(max_exact_pods=500 if exact else 0, time_budget_seconds=5)
    )
    judged_before = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in bound}
    known = set(placement_problems(bound, fleet, judged_before=judged_before))
    greedy = plan(state_of(fleet, bound), burst, base)
    result = plan(state_of(fleet, bound), burst, packed)
    placed = [
        {**p, "spec": {**p["spec"], "nodeName": where}}
        for p, where in zip(burst, result.nodes, strict=True)
        if where is not None
    ]
    assert set(placement_problems([*bound, *placed], fleet, judged_before=judged_before)) <= known
    old_nodes = {p["spec"]["nodeName"] for p in bound}

    def worth(r):
        per_level = [
            sum(r.nodes[i] is not None for i, p in enumerate(burst) if p["spec"]["priority"] == lv)
            for lv in (100, 0)
        ]
        return (*per_level, -len({n for n in r.nodes if n} - old_nodes))

    assert worth(result) >= worth(greedy)


def test_segments_merged_keep_the_moves_at_their_place_in_the_burst():
    # Bursts placed in segments (reservations, volumes) give one result: the moves of
    # each segment are named by their index in the whole burst, for explain.
    nodes = [node(f"n{i}") for i in range(4)]
    first = plan(cluster(*nodes), [pod(f"a{i}") for i in range(3)], PACKED)
    second = plan(cluster(*nodes), [pod(f"b{i}") for i in range(8)], PACKED)
    assert second.packing_moved
    whole = merged([first, second])
    assert whole.packing_moved == {
        **first.packing_moved,
        **{3 + i: node for i, node in second.packing_moved.items()},
    }


def test_the_placement_reuses_the_plans_classes_with_the_same_outcome(monkeypatch):
    # The placement after the plan takes the plan's encoder and classes (the burst is
    # encoded once); classing the pods again gives the same nodes, messages and state.
    # Room is short: the two large pods the kernel placed first are left out for four
    # small ones, so the placement's order differs from the burst's (left out last).
    from kubesalvo.core import burst_packing

    nodes = [node("a0", labels={"pool": "a"}), node("a1", labels={"pool": "a"})]
    nodes.append(node("b0", labels={"pool": "b"}))
    pods = [pod("large-0", "4"), pod("large-1", "4")]
    pods += [pod(f"small-{i}", "2") for i in range(4)]
    pods += [pod("b", "1", nodeSelector={"pool": "b"})]
    gang_labels = {"scheduling.x-k8s.io/pod-group": "g", "minAvailable": "2"}
    pods += [pod(f"g{i}", "500m", labels=gang_labels) for i in range(2)]
    reused_calls = []
    pack = burst_packing.pack

    def spy(*args, **kwargs):
        packed = pack(*args, **kwargs)
        reused_calls.append(packed.classified is not None)
        return packed

    monkeypatch.setattr(burst_packing, "pack", spy)
    state = cluster(*nodes)
    reused = place_burst(state, pods, PACKED)

    def again(*args, **kwargs):
        return dataclasses.replace(pack(*args, **kwargs), classified=None)

    monkeypatch.setattr(burst_packing, "pack", again)
    other = cluster(*nodes)
    fresh = place_burst(other, pods, PACKED)
    assert reused_calls == [True]
    assert reused.nodes == fresh.nodes and reused.messages == fresh.messages
    assert reused.packing_moved == fresh.packing_moved
    assert None in reused.packing_moved.values()  # a pod the kernel placed is left out
    rows = state.rows
    assert (state.requested[:rows] == other.requested[:rows]).all()


def test_a_gang_the_kernel_left_out_goes_after_the_pods_placed(monkeypatch):
    # The kernel spreads a0, a1 over two nodes and the gang (two pods of 3 cpu) finds no
    # two nodes with room: rolled back. The improvement packs a0, a1 together, b0, b1
    # together: a node that was the gang's to take is meant for b0 and b1. The gang goes
    # after them (as pods left out do), so it takes no room meant for a later pod: every
    # pod placed keeps the node the improvement gave it.
    from kubesalvo.core import burst_packing

    nodes = [node(f"n{i}") for i in range(3)]
    gang_labels = {"scheduling.x-k8s.io/pod-group": "g", "minAvailable": "2"}
    pods = [pod("a0", "2"), pod("a1", "2")]
    pods += [pod(f"g{i}", "3", labels=gang_labels) for i in range(2)]
    pods += [pod("b0", "2"), pod("b1", "2")]
    packs = []
    pack = burst_packing.pack

    def spy(*args, **kwargs):
        packs.append(pack(*args, **kwargs))
        return packs[-1]

    monkeypatch.setattr(burst_packing, "pack", spy)
    greedy = plan(cluster(*nodes), pods, LEAST)
    assert greedy.nodes[2:4] == [None, None]
    result = place_burst(cluster(*nodes), pods, PACKED)
    (packed,) = packs
    assert packed.order[-2:] == [2, 3]  # the gang last, its members in their order
    nominated = {
        p["metadata"]["name"]: (p.get("status") or {}).get("nominatedNodeName") for p in packed.pods
    }
    for i, name in enumerate(("a0", "a1", "g0", "g1", "b0", "b1")):
        if nominated[name] is not None:
            assert result.nodes[i] == nominated[name]
    assert result.nodes[2:4] == [None, None]
    assert len(used(result)) == 2
