"""VolumeBinding's capacity score (StorageCapacityScoring on) in the kernel path against
the reference's.

The bursts of test_place_volumes_vs_reference's delayed scenarios (unbound
WaitForFirstConsumer claims on local volumes of several sizes, provisioned claims with
CSIStorageCapacity per zone), placed under the default profile with VolumeBinding's args
given a drawn shape (or upstream's default): every kernel choice must be among the
reference's best nodes with the same total score, so each pod is scored after the
volumes the earlier pods of the burst took, and the pods left out fail alike.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core import volume_burst
from kubesalvo.core.place import place_burst
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.node_resources_fit import ShapePoint
from kubesalvo.core.plugins.volume_binding import DEFAULT_SHAPE, VolumeBindingArgs
from kubesalvo.core.profile import Profile
from tests.core.test_place_volume_slots import _stateful_state, alike_runs
from tests.core.test_place_volumes_vs_reference import delayed_scenarios
from tests.helpers.reference import (
    plan_with_volumes_matches_reference,
)


@st.composite
def shapes(draw):
    if draw(st.booleans()):
        return DEFAULT_SHAPE
    utilizations = sorted(draw(st.sets(st.integers(0, 100), min_size=1, max_size=4)))
    return tuple(ShapePoint(u, draw(st.integers(0, 10))) for u in utilizations)


def _profile(shape, weight):
    base = Profile.default()
    scores = tuple((n, weight if n == names.VOLUME_BINDING else w) for n, w in base.scores)
    return dataclasses.replace(
        base,
        scores=scores,
        plugin_args=((names.VOLUME_BINDING, VolumeBindingArgs(shape=shape)),),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(delayed_scenarios(), shapes(), st.sampled_from((1, 5)))
def test_capacity_scores_match_the_reference_pod_after_pod(scenario, shape, weight):
    fleet, storage, burst = scenario
    profile = _profile(shape, weight)
    plan_with_volumes_matches_reference(fleet, storage, burst, profile)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(alike_runs(), shapes())
def test_alike_runs_are_counted_only_while_they_score_alike(scenario, shape):
    """Runs of alike claims on local volumes of 5Gi and 10Gi: counted where every node's
    free volumes have one size, pod by pod elsewhere; the reference's scores either way."""
    fleet, storage, burst = scenario
    profile = _profile(shape, 1)
    plan_with_volumes_matches_reference(fleet, storage, burst, profile)
    assert storage.counted_scores is None


def test_a_stateful_burst_with_the_gate_on_is_counted_and_decides_as_pod_by_pod(monkeypatch):
    """Two volumes of one size per node: the counted run scores as one segment per pod."""
    profile = _profile(DEFAULT_SHAPE, 1)
    state, pods = _stateful_state(40, 70)
    counted = place_burst(state, pods, profile)
    state_again, pods_again = _stateful_state(40, 70)
    monkeypatch.setattr(volume_burst, "COUNT_ALIKE", False)
    one_by_one = place_burst(state_again, pods_again, profile)
    assert counted.placed == one_by_one.placed == 70
    assert counted.nodes == one_by_one.nodes
    assert list(counted.scores) == list(one_by_one.scores)
    assert counted.volume_bindings == one_by_one.volume_bindings
