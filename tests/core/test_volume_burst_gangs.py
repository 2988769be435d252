"""A gang whose members bind volumes at their first consumer spans the segments of a
burst (core/volume_burst.py): it is placed whole when every member gets a volume of its
own, and taken back whole, its volumes unassumed, when fewer than its minimum do."""

from kubesalvo.core.place import place_burst, plan
from kubesalvo.core.plugins import coscheduling
from tests.core.plugins.test_volume_binding_delayed import available, cluster, node, pod
from tests.helpers.volumes import claim, local_volume

NODES = [node("a"), node("b"), node("c")]


def gang(size, minimum):
    pods = [pod(f"p{i}", f"d{i}") for i in range(size)]
    for member in pods:
        member["metadata"]["labels"] = {"podGroup": "g", "minAvailable": str(minimum)}
    return pods


def state_with_volumes_on(hosts, claims=3):
    pvs = [available(local_volume(f"pv-{h}", h)) for h in hosts]
    return cluster(NODES, [claim(f"d{i}") for i in range(claims)], pvs)


def test_a_gang_with_a_volume_for_each_member_is_placed_whole_on_distinct_volumes():
    state = state_with_volumes_on("abc")
    result = place_burst(state, gang(3, 3))
    assert sorted(result.nodes) == ["a", "b", "c"]
    chosen = [pv for per_pod in result.volume_bindings for _, pv in per_pod]
    assert sorted(chosen) == ["pv-a", "pv-b", "pv-c"]
    assert sorted(state.storage.assumed) == ["pv-a", "pv-b", "pv-c"]
    assert len(state.pods) == 3


def test_a_gang_short_of_volumes_is_taken_back_whole_and_its_volumes_freed():
    state = state_with_volumes_on("ab")
    result = place_burst(state, gang(3, 3))
    assert result.nodes == [None, None, None]
    assert result.placed == 0
    assert list(result.rolled_back) == [True, True, False]
    assert sorted(result.tentative[:2]) == ["a", "b"]
    assert result.messages[0] == (
        "0/3 nodes are available: " + coscheduling.gang_reason("ns/g", 2, 3) + "."
    )
    assert "Coscheduling" in result.rejectors[0]
    assert result.volume_bindings == [[], [], []]
    assert state.storage.assumed == {}
    assert not state.pods  # nothing of the gang stays counted


def test_a_gang_whose_minimum_is_met_keeps_the_members_placed():
    state = state_with_volumes_on("ab")
    result = place_burst(state, gang(3, 2))
    assert sorted(n for n in result.nodes if n) == ["a", "b"]
    assert result.nodes.count(None) == 1
    assert sorted(state.storage.assumed) == ["pv-a", "pv-b"]


def test_planning_a_short_gang_leaves_the_state_as_it_was():
    state = state_with_volumes_on("ab")
    assert plan(state, gang(3, 3)).nodes == [None, None, None]
    assert state.storage.assumed == {} and not state.pods
    assert place_burst(state, gang(2, 2)).placed == 2  # the volumes are still free
