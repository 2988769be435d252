"""The packing yardstick (bench/packing/packing.py) at a small scale: the exact optimum is
never beaten by the kernel's greedy packings nor by BurstPacking, it finds what queue-order
greedy misses and so does BurstPacking; the simulated scale-up and churn scenarios leave
more nodes empty with BurstPacking.

The figures of issue 29 come from the script itself at 20 nodes and 20 seeds (see its
docstring and bench/RESULTS.md).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _packing_module():
    spec = importlib.util.spec_from_file_location("packing_bench", HERE / "packing" / "packing.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_optimum_places_the_large_pods_queue_order_most_allocated_strands():
    bench = _packing_module()
    # Three small pods first: MostAllocated stacks them on one node, and the three large
    # ones that follow find only two nodes with room; the optimum pairs one of each.
    instance = bench.Instance(
        "homogeneous",
        1.0,
        0,
        nodes=((4000, 16384),) * 3,
        pods=((1000, 1024),) * 3 + ((3000, 3072),) * 3,
    )
    most = bench.profile(bench.ScoringStrategyType.MOST_ALLOCATED)
    assert bench.greedy(instance, most) == bench.Solution(placed=5, nodes_used=3)
    assert bench.optimum(instance) == bench.Solution(placed=6, nodes_used=3)


def test_the_optimum_uses_fewer_nodes_when_everything_fits():
    bench = _packing_module()
    instance = bench.Instance(
        "homogeneous", 0.5, 0, nodes=((4000, 16384),) * 4, pods=((1000, 1024),) * 8
    )
    least = bench.profile(bench.ScoringStrategyType.LEAST_ALLOCATED)
    assert bench.greedy(instance, least) == bench.Solution(placed=8, nodes_used=4)
    assert bench.optimum(instance) == bench.Solution(placed=8, nodes_used=2)


def test_burst_packing_places_the_large_pods_queue_order_most_allocated_strands():
    bench = _packing_module()
    instance = bench.Instance(
        "homogeneous",
        1.0,
        0,
        nodes=((4000, 16384),) * 3,
        pods=((1000, 1024),) * 3 + ((3000, 3072),) * 3,
    )
    packings = bench.strategies(instance)
    for name in ("MostAllocated + BurstPacking", "MostAllocated + BurstPacking, moves only"):
        assert packings[name]() == bench.Solution(placed=6, nodes_used=3), name


def test_burst_packing_leaves_more_nodes_empty_in_the_simulated_scenarios():
    bench = _packing_module()
    rows = bench.simulate_scenarios(scale=0.02)
    by = {(r["scenario"], r["profile"]): r for r in rows}
    for scenario in bench.SIMULATE_SCENARIOS:
        plain, packed = by[scenario, "default profile"], by[scenario, "BurstPacking"]
        assert packed["placed"] >= plain["placed"]
        assert packed["nodes_empty_after"] >= plain["nodes_empty_after"]
    # The scale-up burst lands on an empty fleet: packing it frees nodes outright.
    assert (
        by["scale-up", "BurstPacking"]["nodes_empty_after"]
        > (by["scale-up", "default profile"]["nodes_empty_after"])
    )
    assert bench.scenario_table(rows).count("\n") == len(rows) + 1


def test_no_greedy_packing_beats_the_optimum_on_small_random_instances():
    bench = _packing_module()
    for mix in bench.MIXES:
        for load in bench.LOADS:
            instance = bench.make_instance(mix, load, seed=1, nodes=6)
            best = bench.optimum(instance, time_limit=20)
            assert best.proven
            for name, pack in bench.strategies(instance).items():
                got = pack()
                assert got.placed <= best.placed, (mix, load, name)
                if got.placed == best.placed:
                    assert got.nodes_used >= best.nodes_used, (mix, load, name)


def test_the_table_has_a_row_per_scenario_and_packing():
    bench = _packing_module()
    rows = bench.run(seeds=1, nodes=5, time_limit=10)
    per_scenario = len(bench.strategies(bench.make_instance("mixed", 0.7, 0, 5)))
    assert len(rows) == len(bench.MIXES) * len(bench.LOADS) * per_scenario
    assert all(r["nodes_vs_optimum_worst"] >= r["nodes_vs_optimum_mean"] > 0 for r in rows)
    assert bench.table(rows).count("\n") == len(rows) + 1
