"""BurstPacking without a second kernel pass (core/burst_packing.py's ``_proven``): when
arithmetic proves the kernel would take every pod's improved node, the placement is
written without running it (core/place.py's ``_taken``). Checked against the second
pass itself: the same nodes, scores, ties, messages and moves, the same state after
(requests, records, the tie stream), on random bursts with spreads, inter-pod terms,
ports, priorities and gangs; and the shortcut is taken where it should be."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core import burst_packing
from kubesalvo.core.place import place_burst
from kubesalvo.core.plugins.burst_packing import BurstPackingArgs
from kubesalvo.core.synthetic.nodes import make_nodes
from kubesalvo.core.synthetic.workloads import make_pods
from kubesalvo.core.ties import TieBreak
from tests.core import test_place_vs_reference as vs_reference
from tests.core.test_burst_packing import PACKED, cluster, movable_bursts, node, pod
from tests.helpers.feasibility import placement_problems
from tests.helpers.reference import state_of


def _both(monkeypatch, make_state, burst, profile, workloads=()):
    """The burst placed with the shortcut when proven, and always by the second pass:
    (result, state, tie stream, whether the shortcut ran) for each. The second placement
    gets the first one's improvement (the exact solve has a time budget: on a loaded
    machine two solves may differ)."""
    pack, improve = burst_packing.pack, burst_packing.improve
    taken_calls: list[bool] = []
    improved = []

    def recorded(*args, **kwargs):
        improved.append(improve(*args, **kwargs))
        return improved[-1]

    def watched(*args, **kwargs):
        monkeypatch.setattr(burst_packing, "improve", recorded)
        packed = pack(*args, **kwargs)
        taken_calls.append(packed is not None and packed.taken is not None)
        return packed

    def second_pass(*args, **kwargs):
        monkeypatch.setattr(burst_packing, "improve", lambda *_: improved[0])
        packed = pack(*args, **kwargs)
        if packed is None or packed.taken is None:
            return packed
        # The pods as the second pass gets them: each nominated to the node taken.
        names = args[0].names
        nominated = [
            {**p, "status": {**(p.get("status") or {}), "nominatedNodeName": names[row]}}
            for p, row in zip(packed.pods, packed.taken.tolist(), strict=True)
        ]
        return dataclasses.replace(packed, pods=nominated, taken=None)

    out = []
    for spy in (watched, second_pass):
        monkeypatch.setattr(burst_packing, "pack", spy)
        state = make_state()
        ties = TieBreak(7)
        result = place_burst(state, burst, profile, workloads=workloads, ties=ties)
        out.append((result, state, int(ties.state[0])))
    monkeypatch.setattr(burst_packing, "pack", pack)
    monkeypatch.setattr(burst_packing, "improve", improve)
    return out, bool(taken_calls and taken_calls[0])


def _assert_same(shortcut, second):
    (a, state_a, ties_a), (b, state_b, ties_b) = shortcut, second
    assert a.nodes == b.nodes
    assert (a.rows == b.rows).all() and (a.scores == b.scores).all()
    assert a.ties == b.ties and a.messages == b.messages and a.errors == b.errors
    assert a.reason_counts == b.reason_counts and a.rejectors == b.rejectors
    assert (a.rolled_back == b.rolled_back).all() and a.tentative == b.tentative
    assert a.packing_moved == b.packing_moved
    assert ties_a == ties_b
    rows = state_a.rows
    assert (state_a.requested[:rows] == state_b.requested[:rows]).all()
    assert (state_a.nonzero_requested[:rows] == state_b.nonzero_requested[:rows]).all()
    assert {k: r.row for k, r in state_a.pods.items()} == {
        k: r.row for k, r in state_b.pods.items()
    }


def _own_spread(name, cpu):
    made = pod(name, cpu, labels={"app": name})
    made["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": name}},
        }
    ]
    return made


def test_a_burst_whose_fixed_pods_see_no_moved_one_skips_the_second_pass(monkeypatch):
    # As the synthetic distinct burst: pods with a hard spread over their own label stay,
    # plain pods move; no selector of the first matches the second.
    nodes = [node(f"n{i}", cpu=4) for i in range(6)]
    burst = [_own_spread(f"s{i}", "1") for i in range(3)]
    burst += [pod(f"p{i}", "1", labels={"app": f"p{i}"}) for i in range(9)]
    (shortcut, second), taken = _both(monkeypatch, lambda: cluster(*nodes), burst, PACKED)
    assert taken
    assert shortcut[0].packing_moved  # the improvement moved pods
    _assert_same(shortcut, second)


@pytest.mark.parametrize("shape", ["distinct", "replicasets", "mixed"])
def test_synthetic_bursts_take_the_shortcut_with_the_second_passs_outcome(shape, monkeypatch):
    # simulate's workloads, small: distinct pods carry a hard spread over their own label
    # (they stay) beside plain ones (they move); replicasets only soft default ones.
    fleet = make_nodes(60, seed=3)
    burst = make_pods(300, seed=4, shape=shape)
    (shortcut, second), taken = _both(monkeypatch, lambda: state_of(fleet), burst, PACKED)
    if shape != "mixed":  # (mixed has inter-pod terms: a second pass when they see a move)
        assert taken
    _assert_same(shortcut, second)
    placed = [
        {**p, "spec": {**p["spec"], "nodeName": where}}
        for p, where in zip(burst, shortcut[0].nodes, strict=True)
        if where is not None
    ]
    assert not placement_problems(placed, fleet)


def test_a_fixed_pods_spread_selecting_a_moved_pod_gets_the_second_pass(monkeypatch):
    nodes = [node(f"n{i}", cpu=4) for i in range(6)]
    spread = _own_spread("s0", "1")
    spread["spec"]["topologySpreadConstraints"][0]["labelSelector"] = {
        "matchLabels": {"tier": "web"}
    }
    burst = [spread, *(pod(f"p{i}", "1", labels={"tier": "web"}) for i in range(6))]
    (_, _), taken = _both(monkeypatch, lambda: cluster(*nodes), burst, PACKED)
    assert not taken


@pytest.mark.parametrize("selected", [False, True])
def test_a_pod_from_before_with_anti_affinity_allows_the_shortcut_unless_it_selects_a_mover(
    selected, monkeypatch
):
    # A zone-wide anti-affinity term of a pod from before repels pods beyond its node:
    # the shortcut holds only when it selects no pod that moves.
    nodes = [node(f"n{i}", labels={"zone": f"z{i % 2}"}) for i in range(6)]
    old = pod("old", "1", labels={"app": "old"})
    old["spec"]["nodeName"] = "n0"
    old["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "zone",
                    "labelSelector": {"matchLabels": {"app": "web" if selected else "db"}},
                }
            ]
        }
    }
    burst = [pod(f"p{i}", "1", labels={"app": "web"}) for i in range(8)]
    (shortcut, second), taken = _both(monkeypatch, lambda: state_of(nodes, [old]), burst, PACKED)
    assert taken is not selected
    _assert_same(shortcut, second)
    assert all(shortcut[0].nodes)


def test_a_pod_left_out_gets_the_second_pass(monkeypatch):
    nodes = [node("n0", cpu=2)]
    burst = [pod(f"p{i}", "1") for i in range(3)]
    (shortcut, second), taken = _both(monkeypatch, lambda: cluster(*nodes), burst, PACKED)
    assert not taken
    _assert_same(shortcut, second)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vs_reference.scenarios(), st.booleans())
def test_the_shortcut_equals_the_second_pass_on_the_reference_scenarios(scenario, exact):
    # Selectors, affinity, taints, ports, spread, inter-pod terms, gangs, priorities.
    cluster_, bound, burst, profile = scenario
    packed = dataclasses.replace(
        profile, packing=BurstPackingArgs(max_exact_pods=500 if exact else 0)
    )

    def make_state():
        state = state_of(cluster_, bound)
        for namespace in vs_reference.NAMESPACES:
            state.set_namespace(namespace["metadata"]["name"], namespace["metadata"]["labels"])
        return state

    with _patched() as monkeypatch:
        (shortcut, second), _ = _both(
            monkeypatch, make_state, burst, packed, workloads=vs_reference.WORKLOADS
        )
    _assert_same(shortcut, second)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(movable_bursts(), st.booleans())
def test_the_shortcut_equals_the_second_pass_and_passes_the_filters(case, exact):
    fleet, bound, burst = case
    packed = dataclasses.replace(
        PACKED, packing=BurstPackingArgs(max_exact_pods=500 if exact else 0)
    )
    with _patched() as monkeypatch:
        (shortcut, second), _ = _both(monkeypatch, lambda: state_of(fleet, bound), burst, packed)
    _assert_same(shortcut, second)
    judged_before = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in bound}
    known = set(placement_problems(bound, fleet, judged_before=judged_before))
    placed = [
        {**p, "spec": {**p["spec"], "nodeName": where}}
        for p, where in zip(burst, shortcut[0].nodes, strict=True)
        if where is not None
    ]
    assert set(placement_problems([*bound, *placed], fleet, judged_before=judged_before)) <= known


def _patched():
    """A monkeypatch usable inside a hypothesis example (the fixture is per test)."""
    return pytest.MonkeyPatch.context()


def test_numpy_rows_of_the_shortcut_are_the_plans_queue_positions():
    # ``taken`` is indexed by the packed order: a burst with no pod left out keeps the
    # burst's own order, so the rows are the improvement's assignment as it is.
    nodes = [node(f"n{i}") for i in range(3)]
    burst = [pod(f"p{i}", "1") for i in range(5)]
    state = cluster(*nodes)
    result = place_burst(state, burst, PACKED)
    assert all(result.nodes)
    assert np.array_equal(result.rows, [state.row_of[n] for n in result.nodes])
