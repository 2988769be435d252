"""core/_pack.pyx: BurstPacking's node scans in C. ``best_fit`` picks the feasible node
with room left tightest after the pod (a preferred one first, the lowest index among
equals), as a plain loop over the nodes would; ``repack_runs`` sends each run of pods
to the fullest open node it fits, opening the roomiest node only when none fits."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesalvo.core import _pack

NONE_U8 = np.zeros(0, dtype=np.uint8)
ALL = np.zeros(0, dtype=np.int64)


def _i64(rows):
    return np.ascontiguousarray(rows, dtype=np.int64)


def _u8(flags):
    return np.ascontiguousarray(flags, dtype=np.uint8)


def _f64(rows):
    return np.ascontiguousarray(rows, dtype=np.float64)


def test_the_node_left_tightest_by_the_pod_is_picked():
    room = _i64([[4000, 100], [1500, 100], [1000, 100]])
    capacity = _f64([[4000, 100]] * 3)
    # 1000m fits all three; the third is left with nothing, the tightest fit.
    assert _pack.best_fit(room, _i64([1000, 1]), _u8([1, 1, 1]), capacity, NONE_U8, ALL) == 2
    # Not where the filters say no, nor where it does not fit.
    assert _pack.best_fit(room, _i64([1000, 1]), _u8([1, 1, 0]), capacity, NONE_U8, ALL) == 1
    assert _pack.best_fit(room, _i64([5000, 1]), _u8([1, 1, 1]), capacity, NONE_U8, ALL) == -1


def test_a_preferred_node_wins_when_one_fits():
    room = _i64([[4000], [1000], [3000]])
    capacity = _f64([[4000]] * 3)
    need = _i64([1000])
    assert _pack.best_fit(room, need, _u8([1, 1, 1]), capacity, _u8([1, 0, 1]), ALL) == 2
    # None preferred fits: the best of the others.
    assert _pack.best_fit(room, _i64([3500]), _u8([1, 1, 1]), capacity, _u8([0, 1, 1]), ALL) == 0


def test_equal_fits_go_to_the_lowest_node():
    room = _i64([[2000], [2000], [2000]])
    capacity = _f64([[4000]] * 3)
    assert _pack.best_fit(room, _i64([500]), _u8([0, 1, 1]), capacity, NONE_U8, ALL) == 1


def _reference_best_fit(room, need, feasible, capacity, prefer):
    best = best_pref = -1
    least = least_pref = np.inf
    for n in range(len(room)):
        if not feasible[n] or (room[n] < need).any():
            continue
        left = min((room[n, r] - need[r]) / capacity[n, r] for r in range(len(need)))
        if len(prefer) and prefer[n]:
            if left < least_pref:
                best_pref, least_pref = n, left
        elif left < least:
            best, least = n, left
    return best_pref if best_pref >= 0 else best


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_best_fit_is_the_plain_loops_pick(data):
    nodes = data.draw(st.integers(1, 12))
    resources = data.draw(st.integers(1, 3))
    cells = st.integers(0, 8)
    room = _i64(data.draw(st.lists(st.lists(cells, min_size=resources, max_size=resources),
                                   min_size=nodes, max_size=nodes)))  # fmt: skip
    capacity = _f64(np.maximum(room, 1) + data.draw(st.integers(0, 4)))
    need = _i64(data.draw(st.lists(cells, min_size=resources, max_size=resources)))
    feasible = _u8(data.draw(st.lists(st.booleans(), min_size=nodes, max_size=nodes)))
    prefer = _u8(data.draw(st.sampled_from([[], *[[b] * nodes for b in (0, 1)]])) or [])
    if data.draw(st.booleans()):
        prefer = _u8(data.draw(st.lists(st.booleans(), min_size=nodes, max_size=nodes)))
    got = _pack.best_fit(room, need, feasible, capacity, prefer, ALL)
    assert got == _reference_best_fit(room, need, feasible, capacity, prefer)


def test_a_run_fills_the_fullest_open_node_then_opens_the_roomiest():
    # Node 0 is open with 1 cpu left, node 1 closed with 2 cpu, node 2 closed with 4.
    room = _i64([[1000], [2000], [4000]])
    capacity = _f64([[4000]] * 3)
    open_ = _u8([1, 0, 0])
    out = np.full(6, -1, dtype=np.int32)
    _pack.repack_runs(
        room,
        capacity,
        _f64([4000]),
        _u8([[1, 1, 1]]),
        open_,
        _i64([[1000]]),
        _i64([0]),
        _i64([0, 6]),
        _i64(range(6)),
        out,
    )
    # One on the open node, then the roomiest closed node takes four, the last one opens
    # node 1.
    assert out.tolist() == [0, 2, 2, 2, 2, 1]
    assert room.ravel().tolist() == [0, 1000, 0]
    assert open_.tolist() == [1, 1, 1]


def test_pods_of_a_run_that_fit_nowhere_stay_out():
    room = _i64([[1000, 10], [1000, 10]])
    out = np.full(3, -1, dtype=np.int32)
    _pack.repack_runs(
        room,
        _f64([[1000, 10]] * 2),
        _f64([1000, 10]),
        _u8([[0, 1]]),  # node 0 fails the run's filters
        _u8([0, 0]),
        _i64([[500, 1]]),
        _i64([0]),
        _i64([0, 3]),
        _i64([0, 1, 2]),
        out,
    )
    assert out.tolist() == [1, 1, -1]


def test_balance_places_one_pod_at_a_time_where_the_room_matches_it():
    # Two open nodes, n0 with cpu left over, n1 with memory. Balanced, the first
    # cpu-heavy pod goes to n0 (its room most aligned with the pod), the second, n0's
    # room having shrunk, to n1; without balance the run goes as many pods at a time as
    # fit onto the fullest node, n0.
    room = _i64([[3000, 1000], [1500, 3000]])
    capacity = _f64([[4000, 4000]] * 2)
    for balance, expected in ((True, [0, 1]), (False, [0, 0])):
        out = np.full(2, -1, dtype=np.int32)
        _pack.repack_runs(
            room.copy(),
            capacity,
            _f64([4000, 4000]),
            _u8([[1, 1]]),
            _u8([1, 1]),
            _i64([[1000, 500]]),
            _i64([0]),
            _i64([0, 2]),
            _i64([0, 1]),
            out,
            balance,
        )
        assert out.tolist() == expected, balance
