"""Rooms held for nominated pods while a burst is placed (``core.reservations``:
``segments`` and ``place_reserving``).

kube-scheduler counts a nominated pod on its nominated node for pods of lower or equal
priority; pods of higher priority do not see it. (The same on the real control plane,
with preemption writing the nomination: test_run_nominated.py.)
"""

from __future__ import annotations

from typing import Any

import pytest

from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.profile import Profile
from kubesalvo.core.reservations import Reservation, Segment, place_reserving, segments
from kubesalvo.core.state import ClusterState


def pod(name: str, priority: int, cpu: str = "1", nominated: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {
            "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"nominatedNodeName": nominated} if nominated else {},
    }


def reservation(name: str, priority: int, node: str = "n0") -> Reservation:
    return Reservation(f"uid-{name}", pod(name, priority), node, priority)


def node(name: str, cpu: str) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


# --- the split ------------------------------------------------------------------------


def test_pods_of_higher_priority_than_every_reservation_form_a_segment_that_sees_none():
    held = [reservation("r1", 1000), reservation("r2", 100)]
    assert segments([5000, 2000, 1000, 500, 100, 50], held) == [
        Segment(0, 2, 0),  # above both: see neither
        Segment(2, 4, 1),  # 1000 and 500: see r1 (priority 1000 >= theirs)
        Segment(4, 6, 2),  # 100 and 50: see both
    ]


def test_equal_priority_sees_the_reservation():
    assert segments([100, 100], [reservation("r", 100)]) == [Segment(0, 2, 1)]


def test_a_burst_topped_up_from_the_backoff_queue_opens_a_segment_per_change():
    held = [reservation("r", 100)]
    assert segments([1000, 10, 1000], held) == [
        Segment(0, 1, 0),
        Segment(1, 2, 1),
        Segment(2, 3, 0),
    ]


def test_without_priority_sort_every_pod_sees_every_reservation():
    held = [reservation("r1", 1000), reservation("r2", 100)]
    assert segments([5000, 50], held, by_priority=False) == [Segment(0, 2, 2)]


def test_a_gang_cut_by_priorities_is_placed_in_one_segment_that_respects_every_room():
    held = [reservation("r", 100)]
    group = gang.GroupKey("ns", "g")
    assert segments([1000, 10], held, groups=[group, group]) == [Segment(0, 2, 1)]
    # Members of one gang within one segment do not merge anything.
    assert segments([1000, 1000, 10], held, groups=[group, group, None]) == [
        Segment(0, 2, 0),
        Segment(2, 3, 1),
    ]


def test_no_reservation_means_one_segment_and_no_pods_none():
    assert segments([10, 5], []) == [Segment(0, 2, 0)]
    assert segments([], [reservation("r", 1)]) == []


def test_reservations_out_of_priority_order_are_refused():
    with pytest.raises(ValueError):
        segments([1], [reservation("low", 1), reservation("high", 2)])


# --- placing with reservations ----------------------------------------------------------


def test_lower_priority_pods_leave_the_room_and_higher_ones_take_it():
    state = ClusterState()
    state.add_node(node("n0", "2"))
    held = [reservation("nominated", 1000)]
    burst = [pod("top", 2000), pod("same", 1000), pod("low", 10)]
    plan = segments([2000, 1000, 10], held)
    result = place_reserving(state, burst, Profile.default(), plan, held)
    # "top" does not see the reserved cpu and takes one of the two; the nominated pod's
    # cpu is held for "same" and "low", so nothing is left for them.
    assert result.nodes == ["n0", None, None]
    assert result.reason_counts[1] == {"Insufficient cpu": 1}
    assert result.messages[2] == "0/1 nodes are available: 1 Insufficient cpu."
    # The reservation is gone, the placement stays.
    assert set(state.pods) == {"uid-top"}
    assert state.requested[state.row_of["n0"], state.resource_index["cpu"]] == 1000


def test_without_the_reservation_the_lower_priority_pod_would_take_the_room():
    state = ClusterState()
    state.add_node(node("n0", "2"))
    burst = [pod("top", 2000), pod("low", 10)]
    result = place_reserving(state, burst, Profile.default(), segments([2000, 10], []), [])
    assert result.nodes == ["n0", "n0"]


def test_a_failing_kernel_leaves_no_reservation_in_the_state():
    state = ClusterState()
    state.add_node(node("n0", "4"))
    held = [reservation("nominated", 1000)]
    broken = pod("broken", 10, cpu="not-a-quantity")
    with pytest.raises(ValueError):
        place_reserving(state, [broken], Profile.default(), segments([10], held), held)
    assert state.pods == {}
    assert state.requested[state.row_of["n0"], state.resource_index["cpu"]] == 0
