"""core/packing.py: emptying the least filled nodes keeps every pod fitting and feasible,
moves a node's pods all or none, and never uses more nodes than the greedy assignment;
BurstPacking's ``improve`` (exact solve and bounded moves) places at least the kernel's
pods per priority level, higher priorities first, on fewer nodes, every pod fitting
where its class may go."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesalvo.core.packing import (
    Burst,
    Limits,
    better,
    empty_least_filled,
    improve,
    newly_used,
    repack,
    valid,
)


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


# --- improve: BurstPacking's improvement of the kernel's assignment -------------------


def _burst(requests, capacity, assigned, *, classes=None, feasible=None, **kw):
    requests = np.array(requests, dtype=np.int64)
    free = np.array(capacity, dtype=np.int64) - np.array(
        kw.pop("used", np.zeros_like(capacity)), dtype=np.int64
    )
    pods, nodes = len(requests), len(free)
    if classes is None:  # one class per distinct request, as the encoder's classes
        _, classes = np.unique(requests, axis=0, return_inverse=True)
    classes = np.asarray(classes, dtype=np.intp).reshape(-1)
    n_classes = int(classes.max()) + 1 if pods else 0
    return Burst(
        requests,
        free,
        np.array(assigned, dtype=np.int32),
        classes,
        np.ones((n_classes, nodes), bool) if feasible is None else np.array(feasible, bool),
        np.array(kw.get("movable", [True] * pods), bool),
        np.array(kw.get("level", [0] * pods), np.int64),
        np.array(kw.get("held_before", [False] * nodes), bool),
    )


NO_EXACT = Limits(exact_pods=0)


def test_the_exact_solve_places_the_large_pods_greedy_stranded():
    # MostAllocated stacked three small pods on one node; the third large pod found none.
    burst = _burst([[1000]] * 3 + [[3000]] * 3, [[4000]] * 3, [0, 0, 0, 1, 2, -1])
    out, how = improve(burst)
    assert how == "exact"
    assert (out >= 0).all() and valid(burst, out)


def test_the_exact_solve_and_the_moves_use_fewer_nodes_than_the_spread():
    burst = _burst([[1000]] * 8, [[4000]] * 4, [0, 1, 2, 3] * 2)
    for limits in (Limits(), NO_EXACT):
        out, how = improve(burst, limits)
        assert how == ("exact" if limits.exact_pods else "moves")
        assert newly_used(out, burst.held_before) == 2


def test_a_higher_priority_pod_takes_the_room_before_a_lower_one():
    # Room for one more 2000m pod: the high one (level 10) gets it, not the low one.
    burst = _burst([[2000], [2000], [2000]], [[4000]], [0, -1, -1], level=[0, 0, 10])
    for limits in (Limits(), NO_EXACT):
        out, _ = improve(burst, limits)
        assert out.tolist() == [0, -1, 0]


def test_two_pods_of_one_priority_take_the_room_of_one_large_one():
    burst = _burst([[4000], [2000], [2000]], [[4000]], [0, -1, -1])
    for limits in (Limits(), NO_EXACT):
        assert improve(burst, limits)[0].tolist() == [-1, 0, 0]


def test_a_placed_pod_of_higher_priority_is_never_left_out_for_more_lower_ones():
    burst = _burst([[4000], [2000], [2000]], [[4000]], [0, -1, -1], level=[5, 0, 0])
    for limits in (Limits(), NO_EXACT):
        assert improve(burst, limits)[0].tolist() == [0, -1, -1]


def test_immovable_pods_and_filters_are_kept():
    burst = _burst(
        [[1000]] * 4,
        [[4000]] * 4,
        [0, 1, 2, 3],
        classes=[0, 0, 1, 1],
        feasible=[[True, True, False, False], [False, False, True, True]],
        movable=[True, True, True, False],
    )
    for limits in (Limits(), NO_EXACT):
        out, _ = improve(burst, limits)
        assert out[3] == 3 and out[2] in (2, 3) and set(out[:2].tolist()) <= {0, 1}
        assert newly_used(out, burst.held_before) == 2


def test_a_node_held_before_the_burst_is_never_counted_as_freed():
    burst = _burst([[500], [500]], [[2000], [2000]], [0, 1], held_before=[True, False])
    for limits in (Limits(), NO_EXACT):
        out, _ = improve(burst, limits)
        assert out.tolist() == [0, 0]
        assert newly_used(out, burst.held_before) == 0


def test_a_large_burst_is_packed_by_the_moves_onto_far_fewer_nodes():
    rng = np.random.default_rng(0)
    pods, nodes = 2000, 1000
    requests = np.stack(
        [
            rng.choice([250, 500, 1000, 2000], pods),
            rng.choice([1, 2, 4], pods) * 512,
            np.ones(pods),
        ],
        axis=1,
    )
    capacity = [[8000, 32768, 110]] * nodes
    burst = _burst(requests, capacity, np.arange(pods) // 2)
    out, how = improve(burst)
    assert how == "moves" and valid(burst, out)
    # Everything fits in under a third of the nodes the spread used.
    assert newly_used(out, burst.held_before) * 3 < nodes


@settings(max_examples=150, deadline=None)
@given(instances(), st.lists(st.integers(0, 2), min_size=30, max_size=30), st.booleans())
def test_every_improved_assignment_is_valid_and_no_worse(instance, levels, exact):
    requests, capacity, assigned, feasible, movable = instance
    burst = _burst(
        requests,
        capacity,
        assigned,
        classes=np.arange(len(requests)),
        feasible=feasible,
        movable=movable,
        level=levels[: len(requests)],
    )
    out, _ = improve(burst, Limits(time_budget=5.0) if exact else NO_EXACT)
    load = np.zeros((len(capacity), 2), dtype=np.int64)
    for level in set(levels[: len(requests)]):
        # no priority level is served worse unless a higher one is served better
        higher = [v for v in levels[: len(requests)] if v > level]
        mine = [p for p in range(len(requests)) if levels[p] == level]
        if not higher:
            assert sum(out[p] >= 0 for p in mine) >= sum(assigned[p] >= 0 for p in mine)
    for p, n in enumerate(out.tolist()):
        if not movable[p]:
            assert n == assigned[p]
        if n >= 0:
            assert feasible[p][n]
            load[n] += requests[p]
    assert (load <= np.array(capacity)).all()
    assert not better(burst, burst.assigned, out)


def test_a_pod_left_out_is_placed_by_moving_one_pod_out_of_its_way():
    # Both nodes held pods before (a repack leaves their pods alone): the 2-cpu pod fits
    # only once the 1-cpu pod y moves from n1 to n0.
    burst = _burst(
        [[2000], [1000], [1000], [2000]],  # x on n0; y, w on n1; u left out
        [[4000], [4000]],
        [0, 1, 1, -1],
        used=[[1000], [1000]],
        held_before=[True, True],
    )
    out, how = improve(burst, NO_EXACT)
    assert how == "moves" and valid(burst, out)
    assert out.tolist() == [0, 0, 1, 1]


def test_a_node_no_pod_of_which_fits_elsewhere_is_emptied_by_a_swap():
    # n0 and n1 held pods before (their burst pods stay in a repack), each with 1 cpu
    # left; n2 holds a 2-cpu pod that fits neither. Swapped with the 1-cpu pod on n0, it
    # fits there, and the 1-cpu pod then goes to n1: n2 is no longer needed.
    burst = _burst(
        [[2000], [1000], [3000], [2000]],  # a, b on n0; c on n1; d on n2
        [[8000], [8000], [8000]],
        [0, 0, 1, 2],
        used=[[4000], [4000], [0]],
        held_before=[True, True, False],
    )
    assert newly_used(burst.assigned, burst.held_before) == 1
    out, how = improve(burst, NO_EXACT)
    assert how == "moves" and valid(burst, out)
    assert out.tolist() == [0, 1, 1, 0]
    assert newly_used(out, burst.held_before) == 0


def test_when_room_is_short_the_largest_pods_go_aside_so_more_fit():
    # Two 8-cpu nodes for 27 cpu of pods, none placed by the kernel. Smallest first puts
    # 2 + 2 on one node and 5 on the other: no 6 fits (3 pods). Setting aside the 6s
    # (beyond the room, smallest first) packs 5 + 2 and 2, then one 6 fits (4 pods).
    burst = _burst([[5000], [6000], [2000], [2000], [6000], [6000]], [[8000]] * 2, [-1] * 6)
    assert (repack(burst, largest_first=False) >= 0).sum() == 3
    out, how = improve(burst, NO_EXACT)
    assert how == "moves" and valid(burst, out)
    assert (out >= 0).sum() == 4


def test_repack_with_slack_places_the_largest_pods_last_smallest_first():
    # Room for 10 cpu: 2 + 3 + 4 fit (9), the 6-cpu and 5-cpu pods go aside and then the
    # 5 fails, the 6 too; without the slack the largest first would take 6 + 4.
    burst = _burst([[6000], [2000], [5000], [3000], [4000]], [[10000]], [-1] * 5)
    assert repack(burst, slack=0.0).tolist() == [-1, 0, -1, 0, 0]
    assert repack(burst).tolist() == [0, -1, -1, -1, 0]


def test_a_balanced_repack_pairs_cpu_and_memory_heavy_pods_on_fewer_nodes():
    # (cpu, memory) pods on three (4, 4) nodes: first-fit-decreasing puts the two
    # memory-heavy (1, 2) pods together and strands cpu, using three nodes; the balanced
    # repack opens the two nodes whose room covers the burst and sends each pod where
    # the room left matches it, as the moves do.
    requests = [[1000, 2000], [1000, 1000], [2000, 1000], [2000, 1000], [1000, 2000]]
    burst = _burst(requests, [[4000, 4000]] * 3, [-1] * 5)
    assert newly_used(repack(burst), burst.held_before) == 3
    balanced = repack(burst, balanced=True)
    assert valid(burst, balanced) and (balanced >= 0).all()
    assert newly_used(balanced, burst.held_before) == 2
    out, how = improve(burst, NO_EXACT)
    assert how == "moves" and (out >= 0).all() and newly_used(out, burst.held_before) == 2


def test_when_room_is_short_the_kept_pods_are_balanced_so_more_fit():
    # (cpu, memory) pods on two (4, 4) nodes, memory short: packing the memory-heavy
    # (1, 3) pods largest first, or smallest first, strands memory and places 3 pods;
    # balanced, each node gets one (1, 3) and one (2, 1) pod: 4 placed, as the optimum.
    requests = [[1000, 3000], [2000, 1000], [2000, 1000], [1000, 3000], [1000, 3000]]
    burst = _burst(requests, [[4000, 4000]] * 2, [-1] * 5)
    for slack in (0.0, 0.01, 0.02, 0.04):
        assert (repack(burst, slack=slack) >= 0).sum() == 3
    assert (repack(burst, largest_first=False) >= 0).sum() == 3
    assert (repack(burst, slack=0.0, balanced=True) >= 0).sum() == 4
    out, how = improve(burst, NO_EXACT)
    assert how == "moves" and valid(burst, out) and (out >= 0).sum() == 4
