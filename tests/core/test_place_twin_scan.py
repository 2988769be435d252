"""The scans' use of twin groups against the scans that filter and score every row.

Once a kernel has grouped its rows by whole node state (twin groups, built by the bounded
search of a class's only pod), its scans (`_scan`: a slot's rebuild for a class of several
pods, the passes of a spread class, the bounded search's scan) take a row still in its
group's state the group's filter verdict and local score, computed once from one of its
rows (``ks_single_scan_twins``), adding the row's own fixed score and checking its own
topology keys; the diagnosis of a pod no row takes counts the rows still in a group the
pod does not fit by popcount (`_diagnose_twins`). ``_place.set_twin_scan(False)`` turns
both off. Both ways, and the full
scan without the bounded search (no groups at all), must give the same nodes, scores, tie
counts and messages: on random clusters with groups of two rows, and on a fleet of
thousands of identical nodes where the pods of many-pod, spread, host-port and
exactly-balanced classes tie over hundreds of rows and some pods fit no row; and on
groups whose rows the vectorised local score gets wrong (a group takes its redo flag).
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
from kubesalvo.core.ties import TieBreak
from tests.core.reference.strategies import nodes, pods
from tests.helpers.reference import state_of


@contextmanager
def configured(bounded: bool, twin_scan: bool, twins: int = 32) -> Iterator[list[Any]]:
    """The bounded search on or off (never giving up, groups of at least twins rows built
    at the first search), the scans' use of the groups on or off; yields the kernels."""
    before = _place.set_bounded_search(bounded, 1, twins, 0)
    scan_before = _place.set_twin_scan(twin_scan)
    kernels: list[Any] = []
    kernel_class = place.BurstKernel

    def record(*args: Any) -> Any:
        kernels.append(kernel_class(*args))
        return kernels[-1]

    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(place, "BurstKernel", record)
            yield kernels
    finally:
        _place.set_bounded_search(*before)
        _place.set_twin_scan(scan_before)


def three_ways(
    fleet: Sequence[Mapping[str, Any]],
    burst: Sequence[Mapping[str, Any]],
    seed: int,
    bound: Sequence[Mapping[str, Any]] = (),
    twins: int = 32,
) -> tuple[list[PlacementResult], list[int]]:
    """The burst planned with the full scan (no groups), then with the bounded search and
    its groups, the scans not using them and using them; and per run the feasible rows
    the scans took their group's terms for."""
    results, twinned = [], []
    for bounded, twin_scan in ((False, True), (True, False), (True, True)):
        with configured(bounded, twin_scan, twins) as kernels:
            results.append(plan(state_of(fleet, bound), burst, ties=TieBreak(seed)))
        twinned.append(sum(k.twin_scanned for k in kernels))
    return results, twinned


def assert_same(first: PlacementResult, other: PlacementResult) -> None:
    assert other.nodes == first.nodes
    assert list(other.scores) == list(first.scores)
    assert list(other.ties) == list(first.ties)
    assert other.messages == first.messages


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fleet=nodes(min_size=1, max_size=30),
    burst=st.lists(pods(), min_size=1, max_size=12),
    seed=st.integers(0, 2**32),
    small_chunks=st.booleans(),
)
def test_random_clusters_place_the_same_with_the_scans_taking_group_terms(
    fleet, burst, seed, small_chunks
):
    for i, p in enumerate(burst):  # pods named apart (the strategies may repeat a name)
        p["metadata"]["name"] = f"p{i}"
    with pytest.MonkeyPatch.context() as mp:
        if small_chunks:
            mp.setattr(place, "_CHUNK_CELLS", 1)
        (full, off, on), twinned = three_ways(fleet, burst, seed, twins=2)
    assert twinned[0] == twinned[1] == 0
    assert_same(full, off)
    assert_same(full, on)


def node(i: int) -> dict[str, Any]:
    """Two shapes, one of a huge memory and one without cpu (operands past exact doubles
    or a zero allocatable: rows whose local score the caller recomputes); a zone label on
    all but every eleventh node; PreferNoSchedule taints on every seventh; the pods' image
    on every fifth (ImageLocality: a fixed score that varies within a group)."""
    name = f"n{i:04d}"
    labels = {"kubernetes.io/hostname": name}
    if i % 11:
        labels["topology.kubernetes.io/zone"] = f"z{i % 3}"
    big = i % 3 == 2
    huge, cpuless = i % 17 == 5, i % 19 == 7
    out: dict[str, Any] = {
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {
                "cpu": "0" if cpuless else "16" if big else "8",
                "memory": "20Pi" if huge else "64Gi" if big else "32Gi",
                "pods": "110",
            }
        },
    }
    if i % 7 == 3:
        taints = [{"key": f"t{k}", "value": "x", "effect": "PreferNoSchedule"} for k in range(2)]
        out["spec"] = {"taints": taints[: 1 + i % 2]}
    if i % 5 == 1:
        out["status"]["images"] = [{"names": ["img:1"], "sizeBytes": 500 * 2**20}]
    return out


def pod(name: str, cpu: str, memory: str, app: str, image: str = "other") -> dict[str, Any]:
    container = {
        "name": "c",
        "image": image,
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": app}},
        "spec": {"containers": [container]},
    }


def spread(p: dict[str, Any], key: str, hard: bool) -> dict[str, Any]:
    constraint = {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": p["metadata"]["labels"]["app"]}},
    }
    return {**p, "spec": {**p["spec"], "topologySpreadConstraints": [constraint]}}


def host_port(p: dict[str, Any], port: int) -> dict[str, Any]:
    container = {**p["spec"]["containers"][0], "ports": [{"containerPort": port, "hostPort": port}]}
    return {**p, "spec": {**p["spec"], "containers": [container]}}


def fleet_burst() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """1,500 nodes, every thirteenth running a pod (out of its group); a burst of one-pod
    classes (the searches that build the groups), then classes of many pods (slot
    rebuilds), pods whose cpu and memory shares are equal (a balanced score of exactly
    100: flagged rows), pods requesting only memory, spread classes with hard and soft
    zone and hostname constraints (the zone key missing on some rows; one-pod classes
    check it in their scan), a host port, and pods no node takes."""
    fleet = [node(i) for i in range(1500)]
    bound = [
        {
            **pod(f"b{i}", "1", "4Gi", "bound"),
            "spec": {**pod("x", "1", "4Gi", "bound")["spec"], "nodeName": f"n{i:04d}"},
        }
        for i in range(0, 1500, 13)
    ]
    burst = [pod(f"s{i}", f"{100 + 37 * i}m", f"{256 + 91 * i}Mi", f"s{i}") for i in range(4)]
    burst += [pod(f"web{i}", "500m", "1Gi", "web", "img:1") for i in range(40)]
    burst += [pod(f"even{i}", "1", "4Gi", "even") for i in range(30)]
    burst += [
        {
            **pod(f"mem{i}", "1", "3Gi", "mem"),
            "spec": {
                "containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"memory": "3Gi"}}}
                ]
            },
        }
        for i in range(20)
    ]
    burst += [pod(f"api{i}", "250m", "700Mi", "api") for i in range(25)]
    burst += [
        spread(pod(f"zh{i}", "300m", "512Mi", "zh"), "topology.kubernetes.io/zone", True)
        for i in range(20)
    ]
    burst += [
        spread(pod(f"zs{i}", "700m", "2Gi", "zs"), "topology.kubernetes.io/zone", False)
        for i in range(15)
    ]
    burst += [
        spread(pod(f"hh{i}", "200m", "256Mi", "hh"), "kubernetes.io/hostname", True)
        for i in range(20)
    ]
    # one-pod classes with a hard zone constraint: their scan checks the key on every row
    burst += [
        spread(
            pod(f"zk{i}", f"{400 + 10 * i}m", "1Gi", f"zk{i}"), "topology.kubernetes.io/zone", True
        )
        for i in range(3)
    ]
    burst += [host_port(pod(f"port{i}", "100m", "128Mi", "port"), 8080) for i in range(10)]
    # no node takes these (after the groups are built): the diagnosis counts the groups'
    # rows by column (cpu on every shape, memory on all but the huge one)
    burst += [pod(f"big{i}", "17", f"{70 + i}Gi", f"big{i}") for i in range(3)]
    # and this one fits every group but needs a pod no row runs (inter-pod affinity): its
    # rows are diagnosed one by one
    lonely = pod("lonely", "100m", "128Mi", "lonely")
    term = {
        "labelSelector": {"matchLabels": {"app": "nowhere"}},
        "topologyKey": "topology.kubernetes.io/zone",
    }
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    burst.append({**lonely, "spec": {**lonely["spec"], "affinity": affinity}})
    burst += [pod(f"t{i}", f"{150 + 53 * i}m", f"{300 + 77 * i}Mi", f"t{i}") for i in range(4)]
    return fleet, bound, burst


@pytest.mark.parametrize("seed", range(4))
def test_many_pod_and_spread_classes_over_thousands_of_twins_place_alike(seed):
    fleet, bound, burst = fleet_burst()
    (full, off, on), twinned = three_ways(fleet, burst, seed, bound=bound)
    assert twinned[0] == twinned[1] == 0
    assert twinned[2] > 100 * 20  # rows of many scans taken from their groups
    assert max(full.ties) > 100  # exact ties over hundreds of rows, drawn alike
    assert sum(n is not None for n in full.nodes) > len(burst) // 2
    assert_same(full, off)
    assert_same(full, on)


def shaped(i: int, shape: str, cpu: str, memory: str) -> dict[str, Any]:
    name = f"{shape}{i:04d}"
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "shape": shape}},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def selecting(p: dict[str, Any], shape: str, cpu_only: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {**p["spec"], "nodeSelector": {"shape": shape}}
    if cpu_only:  # no memory request: the balanced term's memory share is 0
        requests = {"cpu": p["spec"]["containers"][0]["resources"]["requests"]["cpu"]}
        spec["containers"] = [{**spec["containers"][0], "resources": {"requests": requests}}]
    return {**p, "spec": spec}


@pytest.mark.parametrize("seed", range(3))
def test_group_rows_whose_vectorised_score_is_inexact_take_the_recomputed_one(seed):
    """Groups whose rows the vectorised local score gets wrong, so that a twin row must
    take its group's redo flag: on an empty 6-cpu node a pod of 4080m cpu and no memory
    has a cpu share 4080 * (1 / 6000) one ulp above 0.68, and its balanced term truncates
    to 66 where upstream's division gives 65 (8 cpu and 5600m: 64 where upstream has 65);
    on a node without cpu upstream leaves cpu out of both scores (LeastAllocated is the
    memory share alone, balanced 100), while the vectorised block halves the fit and takes
    the cpu share as 1. Every pod selects one shape, so the scores of the rows of that
    group are the ones compared, tied over its rows."""
    fleet = [shaped(i, "six", "6", "24Gi") for i in range(120)]
    fleet += [shaped(i, "eight", "8", "32Gi") for i in range(120)]
    fleet += [shaped(i, "none", "0", "16Gi") for i in range(80)]
    burst = [selecting(pod(f"s{i}", f"{200 + 50 * i}m", "1Gi", f"s{i}"), "six") for i in range(3)]
    burst += [selecting(pod(f"c{i}", "4080m", "1Gi", "c408"), "six", True) for i in range(30)]
    burst += [selecting(pod(f"d{i}", "5600m", "1Gi", "c560"), "eight", True) for i in range(30)]
    burst += [selecting(pod(f"m{i}", "0", "3Gi", "mem"), "none") for i in range(30)]
    burst += [selecting(pod("m-one", "0", "5Gi", "mem-one"), "none")]
    (full, off, on), twinned = three_ways(fleet, burst, seed)
    assert all(n is not None for n in full.nodes)
    assert twinned[0] == twinned[1] == 0
    assert twinned[2] > 3 * 60  # the three classes' rebuilds took their groups' terms
    assert min(full.ties) > 40  # each pod tied over the free rows of its group
    assert_same(full, off)
    assert_same(full, on)
