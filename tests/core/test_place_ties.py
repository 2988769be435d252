"""Ties between equally scored nodes: the kernel draws the node uniformly among them, as
kube-scheduler's selectHost does, on every path it places by (the max-tree of a class's
cache, a class's only pod in one pass, one soft zone constraint, soft hostname and zone
constraints, by group of rows, passes over the rows), and the same seed draws the same.

Each case places pods that score alike on every node they may use, over many seeds: the
first pod's node is checked to be spread over those nodes as a uniform draw is (a
chi-square bound), every draw is among the reference's best nodes with their count, and
the zones of unequal size show that a path choosing among groups of rows weighs each
group by its rows.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubesalvo.core import place
from kubesalvo.core.place import plan
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.ties import TieBreak
from tests.helpers.reference import kernel_choices, state_of

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"
SEEDS = 240
# chi-square with 5 degrees of freedom (six nodes): above it with probability 0.001
CHI2_LIMIT = 20.5

# Zones of 1, 2 and 3 nodes: a draw among groups that ignored their sizes would send a
# third of the pods to n0 instead of a sixth.
NODES = [
    {
        "metadata": {
            "name": f"n{i}",
            "labels": {HOST: f"n{i}", ZONE: f"z{(0, 1, 1, 2, 2, 2)[i]}", RACK: f"r{i % 2}"},
        },
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
    }
    for i in range(6)
]


def spread(key: str, how: str) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": how,
        "labelSelector": {"matchLabels": {"app": "web"}},
    }


# The path each set of constraints takes in the kernel (core/spread.py's _mode).
PATHS = {
    "max-tree": [],
    "zone": [spread(ZONE, "ScheduleAnyway")],
    "host-and-zone": [spread(HOST, "ScheduleAnyway"), spread(ZONE, "ScheduleAnyway")],
    "grouped": [spread(ZONE, "DoNotSchedule")],
    "passes": [spread(ZONE, "DoNotSchedule"), spread(RACK, "DoNotSchedule")],
}


def pod(name: str, constraints: list[dict[str, Any]]) -> dict[str, Any]:
    # Requests of zero: the resource scores stay 100 on every node, placement after
    # placement, so only the spread terms tell the nodes apart.
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "0", "memory": "0"}}}
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": "web"}},
        "spec": {"containers": [container], "topologySpreadConstraints": constraints},
    }


def chi2(counts: Counter[str], names: list[str], draws: int) -> float:
    expected = draws / len(names)
    return sum((counts[n] - expected) ** 2 / expected for n in names)


@pytest.mark.parametrize("pods", [1, 2], ids=["only-pod", "cached-class"])
@pytest.mark.parametrize("path", list(PATHS))
def test_the_first_pod_is_drawn_uniformly_among_the_tied_nodes(path, pods, monkeypatch):
    kernels = []
    kernel_class = place.BurstKernel

    def recorded(*args):
        kernels.append(kernel_class(*args))
        return kernels[-1]

    monkeypatch.setattr(place, "BurstKernel", recorded)
    state = state_of(NODES)
    burst = [pod(f"p{k}", PATHS[path]) for k in range(pods)]
    first: Counter[str] = Counter()
    for seed in range(SEEDS):
        result = plan(state, burst, ties=TieBreak(seed))
        assert result.ties[0] == 6
        first[result.nodes[0]] += 1
        if seed < 10:  # every draw among the reference's best nodes, their count the kernel's
            ReferenceScheduler(NODES).place_burst(burst, choose=kernel_choices(result, burst))
    names = [n["metadata"]["name"] for n in NODES]
    assert set(first) == set(names)
    assert chi2(first, names, SEEDS) < CHI2_LIMIT, first
    if path == "grouped" and pods == 2:
        assert sum(k.grouped_pods for k in kernels) > 0  # the path was the grouped one


def test_a_tie_among_some_nodes_never_draws_the_others():
    # ImageLocality alone: the four nodes holding the image tie, the six others score 0.
    nodes = []
    for i in range(10):
        images = [{"names": ["app:1"], "sizeBytes": 500 * 1024 * 1024}] if i % 3 == 0 else []
        nodes.append(
            {
                "metadata": {"name": f"n{i}"},
                "status": {
                    "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                    "images": images,
                },
            }
        )
    profile = Profile(scores=(("ImageLocality", 1),))
    container = {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": "1"}}}
    burst = [
        {"metadata": {"name": f"p{k}", "namespace": "ns"}, "spec": {"containers": [container]}}
        for k in range(3)
    ]
    holders = ["n0", "n3", "n6", "n9"]
    seen: Counter[str] = Counter()
    for seed in range(SEEDS):
        result = plan(state_of(nodes), burst, profile, ties=TieBreak(seed))
        assert set(result.nodes) <= set(holders)
        assert result.ties == [4, 4, 4]
        seen.update(result.nodes)
    # 720 draws over 4 nodes: chi-square with 3 degrees of freedom, p = 0.001
    assert sum((seen[n] - 180) ** 2 / 180 for n in holders) < 16.3, seen


def test_the_same_seed_draws_the_same_nodes_and_another_seed_others():
    state = state_of(NODES)
    burst = [pod(f"p{k}", []) for k in range(12)]
    once = plan(state, burst, ties=TieBreak(7)).nodes
    assert plan(state, burst, ties=TieBreak(7)).nodes == once
    assert plan(state, burst).nodes == plan(state, burst, ties=TieBreak(0)).nodes
    assert any(plan(state, burst, ties=TieBreak(seed)).nodes != once for seed in range(3))


def test_a_stream_kept_across_bursts_goes_on_drawing():
    # The runtime keeps one TieBreak: a second burst does not start the stream again, so
    # one pod per burst still spreads.
    state = state_of(NODES)
    ties = TieBreak(3)
    nodes = [plan(state, [pod("p", [])], ties=ties).nodes[0] for _ in range(30)]
    assert len(set(nodes)) >= 4
    fresh = [plan(state, [pod("p", [])], ties=TieBreak(3)).nodes[0] for _ in range(3)]
    assert len(set(fresh)) == 1 and fresh[0] == nodes[0]


def test_a_negative_seed_is_refused():
    with pytest.raises(ValueError, match="seed"):
        TieBreak(-1)
