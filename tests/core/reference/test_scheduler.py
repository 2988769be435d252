"""ReferenceScheduler: selection, messages, assume, bursts and gangs."""

import pytest

from kubesalvo.core.plugins import coscheduling
from kubesalvo.core.plugins.coscheduling.gang import GroupKey
from kubesalvo.core.reference import PodInvalid, ReferenceScheduler

from .builders import node, pod


def gang_pod(name, group, cpu, min_available=None):
    labels = {"podGroup": group}
    if min_available is not None:
        labels["minAvailable"] = str(min_available)
    return pod(name, labels=labels, requests={"cpu": cpu})


def test_best_nodes_hold_every_node_with_the_top_total():
    ref = ReferenceScheduler([node("a"), node("b"), node("c", cpu="8")])
    result = ref.schedule(pod(requests={"cpu": "1"}))
    assert result.best_nodes == {"c"}
    assert result.node == "c"
    assert result.score == sum(ref.scores(pod(requests={"cpu": "1"}))["c"].values())
    tie = ReferenceScheduler([node("a"), node("b")]).schedule(pod(requests={"cpu": "1"}))
    assert tie.best_nodes == {"a", "b"}
    assert tie.message == f"Successfully assigned default/p to {tie.node}"


def test_schedule_does_not_change_the_state_but_assume_does():
    ref = ReferenceScheduler([node("a", cpu="1")])
    p = pod(requests={"cpu": "1"})
    assert ref.schedule(p).node == "a"
    assert ref.schedule(p).node == "a"
    bound = ref.assume(p, "a")
    assert bound["spec"]["nodeName"] == "a"
    assert "nodeName" not in p["spec"]
    assert ref.schedule(p).reason_counts == {"Insufficient cpu": 1}
    ref.forget(bound)
    assert ref.schedule(p).node == "a"


def test_place_burst_sees_earlier_placements_and_reports_failures():
    ref = ReferenceScheduler([node("a", cpu="2"), node("b", cpu="2")])
    results = ref.place_burst([pod(f"p{i}", requests={"cpu": "1"}) for i in range(5)])
    assert sorted(r.node for r in results[:4]) == ["a", "a", "b", "b"]
    assert results[4].node is None
    assert results[4].message == "0/2 nodes are available: 2 Insufficient cpu."
    assert [r.pod for r in results] == [f"default/p{i}" for i in range(5)]


def test_choose_replays_another_tie_break_and_refuses_a_worse_node():
    ref = ReferenceScheduler([node("a"), node("b")])
    results = ref.place_burst([pod("p0", requests={"cpu": "1"})], choose=lambda r: "b")
    assert results[0].node == "b"
    assert results[0].message == "Successfully assigned default/p0 to b"
    # now "a" is emptier and strictly better
    with pytest.raises(ValueError, match="best nodes"):
        ref.place_burst([pod("p1", requests={"cpu": "1"})], choose=lambda r: "b")


def test_a_gang_that_reaches_its_minimum_stays_placed():
    ref = ReferenceScheduler([node("a", cpu="2"), node("b", cpu="2")])
    burst = [gang_pod(f"g{i}", "train", "1", min_available=3) for i in range(5)]
    results = ref.place_burst(burst)
    assert sum(r.node is not None for r in results) == 4
    assert all(r.group == GroupKey("default", "train") for r in results)
    assert not any(r.rolled_back for r in results)


def test_a_gang_below_its_minimum_is_rolled_back_entirely():
    ref = ReferenceScheduler([node("a", cpu="2"), node("b", cpu="2")])
    burst = [gang_pod(f"g{i}", "train", "1", min_available=5) for i in range(5)]
    results = ref.place_burst([*burst, pod("after", requests={"cpu": "2"})])
    gang_results = results[:5]
    assert all(r.node is None for r in gang_results)
    assert [r.rolled_back for r in gang_results] == [True, True, True, True, False]
    reason = coscheduling.gang_reason("default/train", 4, 5)
    assert gang_results[0].message == f"0/2 nodes are available: {reason}."
    assert gang_results[4].message == "0/2 nodes are available: 2 Insufficient cpu."
    # the capacity the gang held is free again for the next pod
    assert results[5].node in {"a", "b"}


def test_a_gang_without_min_available_needs_all_its_pods_and_is_placed_as_a_unit():
    ref = ReferenceScheduler([node("a", cpu="3")])
    burst = [
        gang_pod("g0", "job", "1"),
        pod("solo", requests={"cpu": "1"}),
        gang_pod("g1", "job", "1"),
        gang_pod("g2", "job", "2"),
    ]
    results = ref.place_burst(burst)
    # the gang is placed at its first pod's position: g0, g1 fit, g2 does not -> rolled back,
    # and then the solo pod fits
    assert [r.node for r in results] == [None, "a", None, None]
    assert [r.rolled_back for r in results] == [True, False, True, False]


def test_gangs_are_per_namespace():
    ref = ReferenceScheduler([node("a", cpu="2")])
    first = gang_pod("g0", "x", "1", min_available=1)
    second = gang_pod("g1", "x", "2", min_available=1)
    second["metadata"]["namespace"] = "other"
    results = ref.place_burst([first, second])
    assert results[0].node == "a"
    assert results[1].node is None
    assert results[1].group == GroupKey("other", "x")


def test_pods_with_unmodelled_volumes_or_claims_are_refused():
    ref = ReferenceScheduler([node("a")])
    inline_csi = pod(volumes=[{"name": "data", "csi": {"driver": "csi.example.com"}}])
    with pytest.raises(PodInvalid, match="csi"):
        ref.schedule(inline_csi)
    # A generic ephemeral volume is modelled once the pod is read with its claim's name
    # (volumes.resolve_ephemeral); read without, the attempt is an error, as in the kernel.
    with_ephemeral = pod(volumes=[{"name": "data", "ephemeral": {"volumeClaimTemplate": {}}}])
    unresolved = ref.schedule(with_ephemeral)
    assert unresolved.error and unresolved.node is None
    assert "names no claim" in unresolved.message
    # A claim is modelled (core/pernode/volumes.py): a missing one is a PreFilter reject.
    with_pvc = pod(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}])
    assert ref.schedule(with_pvc).message.endswith('persistentvolumeclaim "d" not found.')
    with pytest.raises(PodInvalid, match="resource claims"):
        ref.schedule(pod(resourceClaims=[{"name": "gpu"}]))
    config_only = pod(volumes=[{"name": "cfg", "configMap": {"name": "c"}}])
    assert ref.schedule(config_only).node == "a"


def test_invalid_selectors_are_errors_not_fit_failures():
    ref = ReferenceScheduler([node("a")])
    bad = pod(
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {
                    "matchExpressions": [{"key": "app", "operator": "In", "values": []}]
                },
            }
        ]
    )
    result = ref.schedule(bad)
    assert result.node is None and result.error and result.reason_counts == {}
    assert result.message == (
        'running PreFilter plugin "PodTopologySpread": get constraints from pod: '
        "obtaining pod's hard topology spread constraints: values: Invalid value: null: "
        "for 'in', 'notin' operators, values set can't be empty"
    )


def test_an_empty_cluster_fails_the_attempt_with_the_no_nodes_error():
    # schedulePod returns ErrNoNodesAvailable before any plugin: an error, no fit message
    result = ReferenceScheduler([]).schedule(pod())
    assert result.error and result.node is None
    assert result.message == "no nodes available to schedule pods"
    assert result.reason_counts == {}
