"""The bounded search of a class's only pod against the full scan it replaces.

``_place.set_bounded_search(False)`` forces the scan; with it on, a class's only pod in a
chunk visits the rows best free-capacity level first and stops where no row left can
reach the best total. Both must end with the same best total, the same tied rows and the
same draw from the tie stream, so a burst placed both ways with one seed gives the same
nodes, scores, tie counts and messages: on random clusters (sizes, shapes, taints,
selectors, spreads, affinities, host ports, gangs) and on fleets of identical nodes where
most placements are exact ties among many rows. The search gives up for the scan where it
would visit more than a share of the rows; the comparisons turn that off (share 1), and
one test checks that giving up places as the scan does. Rows of one whole node state (twin
groups: identical empty nodes) are searched as bitsets, their ties counted and drawn
without a visit; the comparisons run with the groups of at least two rows (so that the
small random clusters have some) and without any (every row through the cells).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core import _place, place
from kubesalvo.core.place import PlacementResult, plan
from kubesalvo.core.profile import Profile
from kubesalvo.core.synthetic.nodes import make_nodes
from kubesalvo.core.synthetic.workloads import make_pods
from kubesalvo.core.ties import TieBreak
from tests.core.reference.strategies import nodes, pods
from tests.helpers.reference import state_of


@contextmanager
def bounded(on: bool, share: int = 1, twins: int = 32, after: int = 0) -> Iterator[None]:
    """The bounded search on or off; share 1: it never gives up for the scan, so that
    each comparison holds the search itself to the scan; twins: the smallest twin group
    searched as one (0: none), built after that many searches of a kernel."""
    before = _place.set_bounded_search(on, share, twins, after)
    try:
        yield
    finally:
        _place.set_bounded_search(*before)


@contextmanager
def recorded_kernels() -> Iterator[list[Any]]:
    kernels: list[Any] = []
    kernel_class = place.BurstKernel

    def record(*args: Any) -> Any:
        kernels.append(kernel_class(*args))
        return kernels[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(place, "BurstKernel", record)
        yield kernels


def both_ways(
    fleet: Sequence[Mapping[str, Any]],
    burst: Sequence[Mapping[str, Any]],
    seed: int,
    profile: Profile | None = None,
    bound: Sequence[Mapping[str, Any]] = (),
    twins: int = 32,
    share: int = 1,
) -> tuple[PlacementResult, PlacementResult, int]:
    """The burst planned with the full scan and with the bounded search (same seed), and
    how many pods the bounded search placed."""
    with bounded(False):
        full = plan(state_of(fleet, bound), burst, profile, ties=TieBreak(seed))
    with bounded(True, share, twins), recorded_kernels() as kernels:
        pruned = plan(state_of(fleet, bound), burst, profile, ties=TieBreak(seed))
    return full, pruned, sum(k.bounded_pods for k in kernels)


def assert_same(full: PlacementResult, pruned: PlacementResult) -> None:
    assert pruned.nodes == full.nodes
    assert list(pruned.scores) == list(full.scores)
    assert list(pruned.ties) == list(full.ties)
    assert pruned.messages == full.messages


def distinct(burst: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods named apart (the strategies may repeat a name)."""
    for i, p in enumerate(burst):
        p["metadata"]["name"] = f"p{i}"
    return burst


profiles = st.sampled_from((Profile.default(),))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fleet=nodes(min_size=1, max_size=30),
    burst=st.lists(pods(), min_size=1, max_size=12),
    seed=st.integers(0, 2**32),
    small_chunks=st.booleans(),
    twins=st.sampled_from((0, 2)),
    share=st.sampled_from((1, 10**9)),
)
def test_random_clusters_place_the_same_with_the_bounded_search(
    fleet, burst, seed, small_chunks, twins, share
):
    """share 10**9: with twin groups, a search that meets any row in a cell scans the
    rows in no group instead (without them, it gives up for the full scan)."""
    with pytest.MonkeyPatch.context() as mp:
        if small_chunks:  # many chunks: more classes have their only pod in one
            mp.setattr(place, "_CHUNK_CELLS", 1)
        full, pruned, _ = both_ways(fleet, distinct(burst), seed, twins=twins, share=share)
    assert_same(full, pruned)


def uniform_fleet(count: int) -> list[dict[str, Any]]:
    return [
        {
            "metadata": {"name": f"n{i:04d}", "labels": {"kubernetes.io/hostname": f"n{i:04d}"}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
        }
        for i in range(count)
    ]


def single(name: str, cpu: str, memory: str) -> dict[str, Any]:
    container = {
        "name": "c",
        "image": "x",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"containers": [container]}}


@pytest.mark.parametrize("twins", [0, 32])
@pytest.mark.parametrize("seed", range(12))
def test_many_exact_ties_are_drawn_alike_by_both(seed, twins):
    """400 identical nodes, a quarter of them half full: each pod of its own shape ties
    over many rows, and both paths (visiting the rows, or counting them as twins) must
    draw the same one of them."""
    fleet = uniform_fleet(400)
    bound = [
        {
            **single(f"b{i}", "4", "16Gi"),
            "spec": {**single("x", "4", "16Gi")["spec"], "nodeName": f"n{i * 4:04d}"},
        }
        for i in range(100)
    ]
    shapes = [("100m", "128Mi"), ("250m", "1Gi"), ("1", "2Gi"), ("2", "8Gi"), ("500m", "512Mi")]
    burst = [single(f"p{i}", *shapes[i % len(shapes)]) for i in range(5)]
    full, pruned, searched = both_ways(fleet, burst, seed, bound=bound, twins=twins)
    assert searched == len(burst)  # every pod is its class's only one
    assert min(full.ties) > 1
    assert_same(full, pruned)


def prefer_no_schedule(node: dict[str, Any], count: int) -> dict[str, Any]:
    taints = [{"key": f"t{k}", "value": "x", "effect": "PreferNoSchedule"} for k in range(count)]
    return {**node, "spec": {"taints": taints}}


def on_node(name: str, cpu: str, memory: str, node: int) -> dict[str, Any]:
    pod = single(name, cpu, memory)
    return {**pod, "spec": {**pod["spec"], "nodeName": f"n{node:04d}"}}


@pytest.mark.parametrize("twins", [0, 32])
@pytest.mark.parametrize("seed", range(8))
def test_prefer_no_schedule_taints_are_scored_alike_by_both(seed, twins):
    """400 identical nodes, half with one, two or three PreferNoSchedule taints the pods do
    not tolerate (TaintToleration then varies over the rows, normalised by the largest
    count among the feasible ones), the untainted ones full, some tainted ones half full,
    and the three-taint ones too full for the larger pods (whose maximum is then 2): both
    paths give the same totals, ties and draws."""
    counts = {1: 3, 2: 1, 3: 2, 7: 1, 8: 2}
    fleet = [
        prefer_no_schedule(node, counts[i % 10]) if i % 10 in counts else node
        for i, node in enumerate(uniform_fleet(400))
    ]
    bound = [on_node(f"full{i}", "8", "32Gi", i) for i in range(400) if i % 10 not in counts]
    bound += [on_node(f"busy{i}", "7", "28Gi", i) for i in range(1, 400, 10)]
    bound += [on_node(f"half{i}", "4", "16Gi", i) for i in range(400) if i % 20 in (2, 8)]
    # each pod its own class (its class's only pod: the bounded search's case)
    shapes = [("100m", "128Mi"), ("2", "8Gi"), ("1500m", "6Gi"), ("3", "12Gi"), ("500m", "1Gi")]
    burst = [single(f"p{i}", *shapes[i % len(shapes)]) for i in range(5)]
    burst += [single(f"q{i}", f"{1 + i}100m", f"{2 + i}Gi") for i in range(5)]
    full, pruned, searched = both_ways(fleet, burst, seed, bound=bound, twins=twins)
    assert searched == len(burst)
    assert_same(full, pruned)


def test_the_search_stops_before_the_rows_no_pod_can_prefer():
    """On a fleet where most nodes are busy, a pod's search visits the free ones and stops:
    fewer rows than the scan, same choice."""
    fleet = uniform_fleet(400)
    bound = [
        {
            **single(f"b{i}", "6", "24Gi"),
            "spec": {**single("x", "6", "24Gi")["spec"], "nodeName": f"n{i:04d}"},
        }
        for i in range(360)
    ]
    burst = [single("p0", "500m", "1Gi")]
    with bounded(True, twins=0), recorded_kernels() as kernels:
        pruned = plan(state_of(fleet, bound), burst, ties=TieBreak(3))
    assert kernels[0].bounded_pods == 1
    assert kernels[0].bounded_rows == 40  # the free nodes' level, and no other
    with bounded(False):
        full = plan(state_of(fleet, bound), burst, ties=TieBreak(3))
    assert_same(full, pruned)


@pytest.mark.parametrize("shape", ["mixed", "distinct", "replicasets"])
def test_synthetic_bursts_place_the_same_with_the_bounded_search(shape):
    fleet = make_nodes(300, seed=5)
    burst = make_pods(400, seed=6, shape=shape)
    full, pruned, searched = both_ways(fleet, burst, seed=11)
    # distinct pods each carry spread constraints and replica sets' classes have many pods:
    # other paths, compared all the same
    assert searched > 0 or shape != "mixed"
    assert_same(full, pruned)


def test_a_search_that_would_visit_most_rows_gives_up_for_the_scan():
    """Every row equal (identical empty nodes): the first cell holds every row, so the
    search (the default share) gives up before visiting any and the scan places the pod,
    drawing as it always does."""
    fleet = uniform_fleet(400)
    burst = [single("p0", "500m", "1Gi"), single("p1", "1", "2Gi")]
    with bounded(True, 16, twins=0), recorded_kernels() as kernels:
        pruned = plan(state_of(fleet), burst, ties=TieBreak(5))
    assert kernels[0].bounded_gaveup == 2
    assert kernels[0].bounded_rows == 0
    with bounded(False):
        full = plan(state_of(fleet), burst, ties=TieBreak(5))
    assert_same(full, pruned)
    assert pruned.ties[0] == 400


def test_twin_rows_are_counted_without_a_visit():
    """The fleet of the test above, the busy nodes and the free ones each one twin group:
    the search visits no row, counts the 40 free ones as tied, and draws as the scan."""
    fleet = uniform_fleet(400)
    bound = [on_node(f"b{i}", "6", "24Gi", i) for i in range(360)]
    burst = [single("p0", "500m", "1Gi")]
    with bounded(True), recorded_kernels() as kernels:
        pruned = plan(state_of(fleet, bound), burst, ties=TieBreak(3))
    assert kernels[0].twin_groups == 2
    assert (kernels[0].bounded_pods, kernels[0].bounded_rows) == (1, 0)
    assert kernels[0].twin_ties == 40
    with bounded(False):
        full = plan(state_of(fleet, bound), burst, ties=TieBreak(3))
    assert_same(full, pruned)


def test_an_empty_fleet_search_stops_at_its_first_cell():
    """Every row equal (identical empty nodes), the default share: the rows are one twin
    group, so no search gives up for the scan or visits a row (the row p0 took is in a
    cell bounded below the twins' best), and each draws as the scan among all the rows
    tied."""
    fleet = uniform_fleet(400)
    burst = [single("p0", "500m", "1Gi"), single("p1", "1", "2Gi")]
    with bounded(True, 16), recorded_kernels() as kernels:
        pruned = plan(state_of(fleet), burst, ties=TieBreak(5))
    assert (kernels[0].bounded_pods, kernels[0].bounded_gaveup) == (2, 0)
    assert kernels[0].bounded_rows == 0
    with bounded(False):
        full = plan(state_of(fleet), burst, ties=TieBreak(5))
    assert_same(full, pruned)
    assert list(pruned.ties) == [400, 399]


def with_image(node: dict[str, Any], image: str) -> dict[str, Any]:
    return {
        **node,
        "status": {**node["status"], "images": [{"names": [image], "sizeBytes": 500 * 2**20}]},
    }


@pytest.mark.parametrize(("share", "after"), [(1, 0), (16, 0), (10**9, 0), (16, 5)])
@pytest.mark.parametrize("seed", range(6))
def test_thousands_of_empty_twins_draw_as_the_scan(seed, share, after):
    """3,000 identical empty nodes in two shapes, some already running a pod (touched),
    some with PreferNoSchedule taints and some holding the pods' image (ImageLocality
    splits a group by its fixed score): pods of distinct requests, each its class's only
    one, tie over hundreds to thousands of rows that the search counts as twins, and
    every pod lands where the scan puts it, with the same totals and tie counts, whether
    the touched rows are searched by cell (share 1), by cell up to a quarter of them and
    scanned past it (16), or scanned (10**9: at the first cell a search would visit),
    the groups built at the first search or after five (as a kernel does: the rows taken
    before then are in no group)."""
    fleet = []
    for i, node in enumerate(uniform_fleet(3000)):
        if i % 3 == 2:
            node = {
                **node,
                "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
            }
        if i % 7 == 3:
            node = prefer_no_schedule(node, 1 + i % 2)
        if i % 5 == 1:
            node = with_image(node, "img:1")
        fleet.append(node)
    bound = [on_node(f"b{i}", "1", "4Gi", i) for i in range(0, 3000, 13)]
    burst = [
        {
            **single(f"p{i}", f"{100 + 37 * i}m", f"{256 + 91 * i}Mi"),
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "img:1" if i % 2 else "other",
                        "resources": {
                            "requests": {"cpu": f"{100 + 37 * i}m", "memory": f"{256 + 91 * i}Mi"}
                        },
                    }
                ]
            },
        }
        for i in range(24)
    ]
    with bounded(False):
        full = plan(state_of(fleet, bound), burst, ties=TieBreak(seed))
    with bounded(True, share, after=after), recorded_kernels() as kernels:
        pruned = plan(state_of(fleet, bound), burst, ties=TieBreak(seed))
    assert kernels[0].twin_groups >= 2
    assert (kernels[0].twin_scans == 0) == (share == 1)
    assert kernels[0].bounded_pods == len(burst)
    assert kernels[0].bounded_gaveup <= after  # the searches before the groups only
    assert kernels[0].twin_ties > 100 * (len(burst) - after)
    assert max(full.ties) > 100
    assert_same(full, pruned)


def test_groups_past_the_kept_ones_are_searched_by_cell():
    """70 shapes of three identical nodes each (groups of two rows searched as one): the
    kernel keeps 64 groups, the other nodes go through the cells, and every pod lands
    where the scan puts it."""
    fleet = [
        {
            "metadata": {"name": f"n{i:04d}", "labels": {"kubernetes.io/hostname": f"n{i:04d}"}},
            "status": {"allocatable": {"cpu": f"{4 + i // 3}", "memory": "32Gi", "pods": "110"}},
        }
        for i in range(210)
    ]
    burst = [single(f"p{i}", f"{200 + 50 * i}m", f"{1 + i % 4}Gi") for i in range(12)]
    with bounded(False):
        full = plan(state_of(fleet), burst, ties=TieBreak(7))
    with bounded(True, 1, 2), recorded_kernels() as kernels:
        pruned = plan(state_of(fleet), burst, ties=TieBreak(7))
    assert kernels[0].twin_groups == 64
    assert kernels[0].bounded_pods == len(burst)
    assert_same(full, pruned)
