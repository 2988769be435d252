"""The packing yardstick of issue 29: greedy placement against the exact optimum.

Small instances (20 nodes, empty before the burst) are solved exactly as a mixed-integer
model by scipy's ``milp`` (HiGHS): first as many pods placed as possible, then as few
nodes used as possible. The same burst then goes through ``plan`` (the production kernel)
with kube-scheduler's default profile (LeastAllocated) and with MostAllocated, in queue
order and sorted largest cpu first, and the table compares nodes used and pods placed.

Scenarios: two node mixes (homogeneous, mixed sizes) x three loads (bursts whose cpu
requests add up to 70%, 95% and 105% of the nodes' allocatable cpu), 20 seeds each. The
BurstPacking rows are ``plan`` under the same profiles with the plugin enabled (its
defaults: the exact solve within 1 s, then the bounded moves), and with the moves alone.

``--scenarios`` instead runs ``kubesalvo simulate --json`` on the ``scale-up`` and
``churn`` scenarios of bench/e2e (their bench section dropped; ``--scale`` shrinks fleet
and pods) without and with a profile enabling BurstPacking, and reports the nodes the
burst leaves empty for a scale-down.

Past BurstPacking's exact limits (``--nodes 120``: more than its default maxExactNodes
of 100 and about 750-1,200 pods, more than maxExactPods of 500) its rows are the bounded
moves alone; the optimum then may not be proven within ``--time-limit`` (the table says
how many were): an unproven optimum is HiGHS's best solution, so a ratio against it can
fall below 1.

Run: ``python3 bench/packing/packing.py [--seeds 20] [--nodes 20] [--time-limit 30]``,
``python3 bench/packing/packing.py --scenarios [--scale 1]``; ``bench/test_packing.py``
runs both small.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix

from kubesalvo.core.packing import empty_least_filled
from kubesalvo.core.place import plan
from kubesalvo.core.plugins.burst_packing import BurstPackingArgs
from kubesalvo.core.plugins.node_resources_fit import (
    NodeResourcesFitArgs,
    ScoringStrategy,
    ScoringStrategyType,
)
from kubesalvo.core.profile import Profile
from kubesalvo.core.state import ClusterState

MIXES = ("homogeneous", "mixed")
LOADS = (0.70, 0.95, 1.05)
# Node sizes: (cpu millicores, memory MiB); homogeneous fleets use the middle one.
NODE_SIZES = ((4000, 16384), (8000, 32768), (16000, 65536))
# Pod sizes, cpu millicores with a memory MiB per millicore ratio (a menu, as the
# ReplicaSets of a real burst repeat a few shapes); weights favour the small ones.
POD_CPU = (250, 500, 750, 1000, 1500, 2000, 3000)
POD_CPU_WEIGHTS = (6, 8, 4, 6, 3, 3, 1)
MEMORY_PER_MILLICORE = (1, 2, 4, 6)
MAX_PODS_PER_NODE = 110


@dataclass(frozen=True)
class Instance:
    """One burst on one empty fleet."""

    mix: str
    load: float
    seed: int
    nodes: tuple[tuple[int, int], ...]  # (cpu m, memory Mi) per node
    pods: tuple[tuple[int, int], ...]  # (cpu m, memory Mi) per pod, in queue order


def make_instance(mix: str, load: float, seed: int, nodes: int = 20) -> Instance:
    """A fleet of ``mix`` nodes and a burst of about ``load`` times its cpu, from ``seed``."""
    rng = random.Random(f"{mix}/{load}/{seed}")
    if mix == "homogeneous":
        fleet = [NODE_SIZES[1]] * nodes
    else:
        fleet = sorted((rng.choice(NODE_SIZES) for _ in range(nodes)), reverse=True)
    target = load * sum(cpu for cpu, _ in fleet)
    pods: list[tuple[int, int]] = []
    total = 0
    while total < target:
        cpu = rng.choices(POD_CPU, POD_CPU_WEIGHTS)[0]
        pods.append((cpu, cpu * rng.choice(MEMORY_PER_MILLICORE)))
        total += cpu
    return Instance(mix, load, seed, tuple(fleet), tuple(pods))


@dataclass(frozen=True)
class Solution:
    """Pods placed and nodes used by one packing of an instance."""

    placed: int
    nodes_used: int
    proven: bool = True  # for the optimum: HiGHS proved it within its time limit


def optimum(instance: Instance, time_limit: float = 30.0) -> Solution:
    """The exact optimum: most pods placed, then fewest nodes used.

    Pods of one size are one integer column per node (how many of them it takes), which
    keeps the model small; identical nodes are used in order (symmetry breaking).
    """
    shapes = sorted(set(instance.pods))
    count = [instance.pods.count(s) for s in shapes]
    n_nodes, n_shapes = len(instance.nodes), len(shapes)
    n_x = n_shapes * n_nodes
    n_vars = n_x + n_nodes  # x[s, n] then y[n]

    def x(s: int, n: int) -> int:
        return s * n_nodes + n

    # Placing one more pod is worth more than every node together.
    weight = n_nodes + 1
    cost = np.concatenate([np.full(n_x, -float(weight)), np.ones(n_nodes)])
    rows: list[tuple[dict[int, float], float, float]] = []
    for s in range(n_shapes):
        rows.append(({x(s, n): 1.0 for n in range(n_nodes)}, 0, count[s]))
    for n, (cpu, memory) in enumerate(instance.nodes):
        y = n_x + n
        for size_of, capacity in ((0, cpu), (1, memory), (None, MAX_PODS_PER_NODE)):
            row = {
                x(s, n): float(shapes[s][size_of] if size_of is not None else 1)
                for s in range(n_shapes)
            }
            row[y] = -float(capacity)
            rows.append((row, -np.inf, 0))
        if n and instance.nodes[n] == instance.nodes[n - 1]:
            rows.append(({y: 1.0, y - 1: -1.0}, -np.inf, 0))
    matrix = lil_matrix((len(rows), n_vars))
    for i, (row, _, _) in enumerate(rows):
        for j, value in row.items():
            matrix[i, j] = value
    upper = np.concatenate([np.repeat(np.array(count, float), n_nodes), np.ones(n_nodes)])
    result = milp(
        cost,
        constraints=LinearConstraint(matrix.tocsr(), [r[1] for r in rows], [r[2] for r in rows]),
        integrality=np.ones(n_vars),
        bounds=Bounds(np.zeros(n_vars), upper),
        # No relative gap: HiGHS's default (1e-4 of an objective near -weight x pods)
        # lets a "proven" optimum of 120 nodes use several nodes more than the best.
        options={"time_limit": time_limit, "mip_rel_gap": 0.0},
    )
    if result.x is None:
        raise RuntimeError(f"no solution for {instance.mix}/{instance.load}/{instance.seed}")
    values = np.round(result.x).astype(int)
    placed = int(values[:n_x].sum())
    used = sum(1 for n in range(n_nodes) if any(values[x(s, n)] for s in range(n_shapes)))
    return Solution(placed, used, proven=result.status == 0)


def _node(name: str, cpu: int, memory: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {
            "allocatable": {
                "cpu": f"{cpu}m",
                "memory": f"{memory}Mi",
                "pods": str(MAX_PODS_PER_NODE),
            }
        },
    }


def _pod(i: int, cpu: int, memory: int) -> dict[str, Any]:
    requests = {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}
    return {
        "metadata": {"name": f"p{i:05d}", "namespace": "bench", "uid": f"p{i:05d}"},
        "spec": {
            "containers": [{"name": "c", "image": "app:1", "resources": {"requests": requests}}]
        },
    }


def profile(strategy: ScoringStrategyType) -> Profile:
    """kube-scheduler's default profile with NodeResourcesFit scoring by ``strategy``."""
    return Profile(fit=NodeResourcesFitArgs(scoring_strategy=ScoringStrategy(type=strategy)))


def greedy(
    instance: Instance,
    chosen: Profile,
    order: Callable[[Sequence[int]], list[int]] | None = None,
    then_empty: bool = False,
) -> Solution:
    """The burst through ``plan`` (the production kernel) under ``chosen``; with
    ``then_empty``, followed by core/packing.py's emptying of the least filled nodes
    (resources only: the instances have no other constraint; the pod count per node
    stays far below its limit of 110)."""
    state = ClusterState()
    for n, (cpu, memory) in enumerate(instance.nodes):
        state.add_node(_node(f"n{n:03d}", cpu, memory))
    indices = list(range(len(instance.pods)))
    if order is not None:
        indices = order(indices)
    pods = [_pod(i, *instance.pods[i]) for i in indices]
    result = plan(state, pods, chosen)
    used = len({name for name in result.nodes if name is not None})
    if not then_empty:
        return Solution(result.placed, used)
    # Rows are ClusterState rows, added in node order: row n is node n.
    requests = np.array([instance.pods[i] for i in indices], dtype=np.int64)
    capacity = np.array(instance.nodes, dtype=np.int64)
    load = np.zeros_like(capacity)
    placed = result.rows >= 0
    np.add.at(load, result.rows[placed], requests[placed])
    packed = empty_least_filled(
        requests,
        capacity - load,
        result.rows.astype(np.int32),
        np.ones((len(indices), len(capacity)), dtype=bool),
        np.ones(len(indices), dtype=bool),
        np.zeros(len(capacity), dtype=bool),
    )
    return Solution(result.placed, len(set(packed[packed >= 0].tolist())))


def largest_first(instance: Instance) -> Callable[[Sequence[int]], list[int]]:
    return lambda indices: sorted(indices, key=lambda i: -instance.pods[i][0])


def strategies(instance: Instance) -> dict[str, Callable[[], Solution]]:
    """The packings compared with the optimum, by the name the table shows."""
    least = profile(ScoringStrategyType.LEAST_ALLOCATED)
    most = profile(ScoringStrategyType.MOST_ALLOCATED)
    packed_least = dataclasses.replace(least, packing=BurstPackingArgs())
    packed_most = dataclasses.replace(most, packing=BurstPackingArgs())
    moves_least = dataclasses.replace(least, packing=BurstPackingArgs(max_exact_pods=0))
    moves_most = dataclasses.replace(most, packing=BurstPackingArgs(max_exact_pods=0))
    return {
        "LeastAllocated": lambda: greedy(instance, least),
        "MostAllocated": lambda: greedy(instance, most),
        "MostAllocated, largest first": lambda: greedy(instance, most, largest_first(instance)),
        "MostAllocated, then emptying": lambda: greedy(instance, most, then_empty=True),
        "LeastAllocated, then emptying": lambda: greedy(instance, least, then_empty=True),
        "LeastAllocated + BurstPacking": lambda: greedy(instance, packed_least),
        "MostAllocated + BurstPacking": lambda: greedy(instance, packed_most),
        "LeastAllocated + BurstPacking, moves only": lambda: greedy(instance, moves_least),
        "MostAllocated + BurstPacking, moves only": lambda: greedy(instance, moves_most),
    }


def run(seeds: int = 20, nodes: int = 20, time_limit: float = 30.0) -> list[dict[str, Any]]:
    """One row per scenario and packing: node and placed-pod ratios against the optimum."""
    rows: list[dict[str, Any]] = []
    for mix in MIXES:
        for load in LOADS:
            per: dict[str, list[tuple[Solution, Solution]]] = {}
            unproven = 0
            for seed in range(seeds):
                instance = make_instance(mix, load, seed, nodes)
                best = optimum(instance, time_limit)
                unproven += not best.proven
                for name, pack in strategies(instance).items():
                    per.setdefault(name, []).append((pack(), best))
            for name, pairs in per.items():
                node_ratio = [s.nodes_used / b.nodes_used for s, b in pairs]
                rows.append(
                    {
                        "mix": mix,
                        "load": load,
                        "packing": name,
                        "nodes_vs_optimum_mean": round(statistics.fmean(node_ratio), 3),
                        "nodes_vs_optimum_worst": round(max(node_ratio), 3),
                        "unplaced_that_optimum_fits_mean": round(
                            statistics.fmean(b.placed - s.placed for s, b in pairs), 2
                        ),
                        "unplaced_that_optimum_fits_worst": max(
                            b.placed - s.placed for s, b in pairs
                        ),
                        "placed_vs_optimum_worst": round(
                            min(s.placed / b.placed for s, b in pairs), 4
                        ),
                        "optimum_unproven": unproven,
                        "seeds": seeds,
                    }
                )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| nodes | load | packing | nodes / optimum (mean, worst) "
        "| pods the optimum places and it does not (mean, worst) | placed / optimum (worst) "
        "| optimum proven |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['mix']} | {r['load']:.0%} | {r['packing']} | "
            f"{r['nodes_vs_optimum_mean']:.3f}, {r['nodes_vs_optimum_worst']:.3f} | "
            f"{r['unplaced_that_optimum_fits_mean']:.2f}, {r['unplaced_that_optimum_fits_worst']} "
            f"| {r['placed_vs_optimum_worst']:.4f} "
            f"| {r['seeds'] - r['optimum_unproven']}/{r['seeds']} |"
        )
    return "\n".join(lines)


E2E = Path(__file__).resolve().parent.parent / "e2e"
SIMULATE_SCENARIOS = ("scale-up", "churn")
PACKED_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    reserve:
      enabled: [{name: BurstPacking}]
"""


def simulate_scenarios(scale: float = 1.0) -> list[dict[str, Any]]:
    """``kubesalvo simulate`` on bench/e2e's scale-up and churn scenarios, without and
    with BurstPacking: pods placed, nodes used, nodes left empty (for a scale-down)."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "packed.yaml"
        config.write_text(PACKED_CONFIG)
        for name in SIMULATE_SCENARIOS:
            scenario = yaml.safe_load((E2E / f"{name}.yaml").read_text())
            scenario.pop("bench", None)  # the runtime bench's arrival settings
            scenario["fleet"]["nodes"] = max(1, round(scenario["fleet"]["nodes"] * scale))
            for workload in scenario["workloads"]:
                workload["pods"] = max(1, round(workload["pods"] * scale))
            path = Path(tmp) / f"{name}.yaml"
            path.write_text(yaml.safe_dump(scenario))
            for label, extra in (
                ("default profile", []),
                ("BurstPacking", ["--config", str(config)]),
            ):
                out = subprocess.run(
                    [sys.executable, "-m", "kubesalvo.sched.cli", "simulate", "--scenario",
                     str(path), "--json", *extra],
                    check=True, capture_output=True, text=True,
                )  # fmt: skip
                summary = json.loads(out.stdout)
                rows.append(
                    {
                        "scenario": name,
                        "profile": label,
                        "nodes": summary["nodes"],
                        "pods": summary["pods"],
                        "placed": summary["placed"],
                        "nodes_used_before": summary["nodes_used_before"],
                        "nodes_used_after": summary["nodes_used_after"],
                        "nodes_empty_after": summary["nodes"] - summary["nodes_used_after"],
                        "seconds": round(summary["seconds"], 3),
                    }
                )
    return rows


def scenario_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| scenario | profile | pods placed | nodes used before, after | nodes left empty "
        "| seconds (indicative) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['scenario']} ({r['nodes']:,} nodes) | {r['profile']} | "
            f"{r['placed']:,} / {r['pods']:,} | {r['nodes_used_before']:,}, "
            f"{r['nodes_used_after']:,} | {r['nodes_empty_after']:,} | {r['seconds']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds per optimum")
    parser.add_argument("--scenarios", action="store_true", help="simulate scale-up and churn")
    parser.add_argument("--scale", type=float, default=1.0, help="--scenarios: size factor")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.scenarios:
        rows = simulate_scenarios(args.scale)
        print(json.dumps(rows, indent=1) if args.json else scenario_table(rows))
        return 0
    rows = run(args.seeds, args.nodes, args.time_limit)
    print(json.dumps(rows, indent=1) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
