"""core/packing.py: emptying the least filled nodes keeps every pod fitting and feasible,
moves a node's pods all or none, and never uses more nodes than the greedy assignment."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesalvo.core.packing import empty_least_filled


def _run(requests, capacity, assigned, feasible=None, movable=None, held_before=None, used=None):
    requests = np.array(requests, dtype=np.int64)
    capacity = np.array(capacity, dtype=np.int64)
    assigned = np.array(assigned, dtype=np.int32)
    pods, nodes = len(requests), len(capacity)
    used = np.zeros_like(capacity) if used is None else np.array(used, dtype=np.int64)
    load = np.zeros_like(capacity)
    np.add.at(load, assigned[assigned >= 0], requests[assigned >= 0])
    return empty_least_filled(
        requests,
        capacity - used - load,
        assigned,
        np.ones((pods, nodes), bool) if feasible is None else np.array(feasible, bool),
        np.ones(pods, bool) if movable is None else np.array(movable, bool),
        np.zeros(nodes, bool) if held_before is None else np.array(held_before, bool),
    )


def test_the_least_filled_node_is_emptied_into_the_others():
    # Spread as LeastAllocated would: one pod per node; two nodes can take all three.
    out = _run([[1000], [1000], [1000]], [[2000], [2000], [2000]], [0, 1, 2])
    assert len(set(out.tolist())) == 2


def test_a_node_is_emptied_only_when_all_its_pods_find_room():
    out = _run([[1500], [600], [1500]], [[2000], [2000], [2000]], [0, 1, 1])
    assert out.tolist() == [0, 1, 1]


def test_pods_move_only_to_feasible_nodes_and_immovable_pods_stay():
    requests, capacity = [[500], [500]], [[2000], [2000]]
    assert _run(requests, capacity, [0, 1], feasible=[[True, False], [False, True]]).tolist() == [
        0,
        1,
    ]
    assert _run(requests, capacity, [0, 1], movable=[False, False]).tolist() == [0, 1]


def test_a_node_with_pods_from_before_the_burst_is_kept_and_takes_pods():
    out = _run(
        [[500], [500]], [[2000], [2000]], [0, 1], held_before=[True, False], used=[[500], [0]]
    )
    assert out.tolist() == [0, 0]


def test_unplaced_pods_stay_unplaced():
    out = _run([[3000], [500], [500]], [[2000], [2000]], [-1, 0, 1])
    assert out[0] == -1


@st.composite
def instances(draw):
    nodes = draw(st.integers(1, 8))
    pods = draw(st.integers(1, 30))
    capacity = draw(
        st.lists(
            st.tuples(st.integers(1000, 8000), st.integers(1000, 8000)),
            min_size=nodes,
            max_size=nodes,
        )
    )
    requests = draw(
        st.lists(
            st.tuples(st.integers(1, 3000), st.integers(1, 3000)), min_size=pods, max_size=pods
        )
    )
    feasible = draw(
        st.lists(
            st.lists(st.booleans(), min_size=nodes, max_size=nodes), min_size=pods, max_size=pods
        )
    )
    movable = draw(st.lists(st.booleans(), min_size=pods, max_size=pods))
    order = draw(st.permutations(range(pods)))
    # A greedy first fit in a random order gives a valid starting assignment.
    room = [list(c) for c in capacity]
    assigned = [-1] * pods
    for p in order:
        for n in range(nodes):
            if feasible[p][n] and all(room[n][r] >= requests[p][r] for r in range(2)):
                assigned[p] = n
                room[n] = [room[n][r] - requests[p][r] for r in range(2)]
                break
    return requests, capacity, assigned, feasible, movable


@settings(max_examples=300, deadline=None)
@given(instances())
def test_every_packed_assignment_fits_is_feasible_and_uses_no_more_nodes(instance):
    requests, capacity, assigned, feasible, movable = instance
    out = _run(requests, capacity, assigned, feasible=feasible, movable=movable)
    load = np.zeros((len(capacity), 2), dtype=np.int64)
    for p, n in enumerate(out.tolist()):
        assert (n == -1) == (assigned[p] == -1)
        if n >= 0:
            assert feasible[p][n]
            load[n] += requests[p]
        if not movable[p]:
            assert n == assigned[p]
    assert (load <= np.array(capacity)).all()
    assert len(set(out[out >= 0].tolist())) <= len({n for n in assigned if n >= 0})
