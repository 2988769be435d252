"""A steady stream of small bursts, in-process: the CPU each burst costs (issue 33).

Run from the worktree's root as ``python3 bench/steady_bursts.py [options]``.

The runtime under a steady rate places many small bursts one after another (at 75% of
the bind ceiling on the quiet machine: ~2,000 bursts of ~17 pods), each through
``core.place.place_burst`` on the scheduler cache's state, every placement assumed in
the state. This builds the bench's state (``--nodes`` nodes of the synthetic fleet with
``--running`` ReplicaSet pods of the bench's ``replicasets`` shape bound) and places
``--bursts`` bursts of ``--min``-``--max`` pending pods of the same shape the same way,
with the profile ``kubesalvo bench --kubernetes`` gives kubesalvo for ``--release``,
reporting the CPU time per burst and per pod, and the encode and kernel seconds the
results carry. ``--profile FILE`` runs the bursts under cProfile and prints the
functions with the most own and cumulative time; ``--no-class-cache`` places every burst
with fresh class tables (core/class_cache.py), the cost before they were kept.
``--workloads`` hands each burst the ReplicaSets of its namespaces, as ``kubesalvo run``
does: the pods then carry the default spread constraints (hostname and zone), whose
counters the runtime's bursts pay for; without it the pods are spread-free.
``--hand-off thread`` places each burst as the running scheduler places a large one,
from an asyncio loop through ``asyncio.to_thread``; ``--hand-off loop`` calls it on the
loop itself, as the cycle places a small burst (sched/cycle/burst.py, ``inline_pod_nodes``);
the default calls it with no loop at all.

The ``digest`` line hashes every burst's nodes: two runs that print the same digest made
the same decisions. The figures are CPU seconds of this process; on a shared machine
they are indicative only.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import io
import json
import pstats
import random
import sys
import time
from typing import Any

from kubesalvo.core.place import place_burst
from kubesalvo.core.synthetic import parse_scenario
from kubesalvo.core.ties import TieBreak
from kubesalvo.sched.config.gates import FeatureGates
from kubesalvo.sched.config.loader import parse_config
from kubesalvo.sched.simulate.run import burst_workloads, load_state

try:
    from kubesalvo.core import class_cache
except ImportError:  # an install from before the class cache: the A of an A/B against it
    class_cache = None  # type: ignore[assignment]


def build(
    nodes: int, running: int, pending: int, seed: int, owners: bool = False
) -> tuple[Any, list[dict[str, Any]], Any]:
    """The state with ``running`` pods bound, ``pending`` pods to place, the snapshot
    (``owners``: with a ReplicaSet owning each ReplicaSet-like class, Scenario.generate)."""
    scenario = parse_scenario(
        {
            "name": "steady-bursts",
            "seed": seed,
            "fleet": {"nodes": nodes},
            "workloads": [
                {"shape": "replicasets", "pods": running, "name": "running", "bound": True},
                {"shape": "replicasets", "pods": pending, "name": "stream"},
            ],
        }
    )
    snapshot = scenario.generate(owners=owners)
    state = load_state(snapshot)
    queue = [p for p in snapshot.pods if not (p.get("spec") or {}).get("nodeName")]
    # The stream's pods arrive mixed, as a rate of pods of several ReplicaSets does.
    random.Random(seed).shuffle(queue)
    return state, queue, snapshot


def cut(queue: list[dict[str, Any]], bursts: int, low: int, high: int, seed: int) -> list[Any]:
    rng = random.Random(seed + 1)
    out, at = [], 0
    for _ in range(bursts):
        size = rng.randint(low, high)
        if at + size > len(queue):
            break
        out.append(queue[at : at + size])
        at += size
    return out


# The profile `kubesalvo bench --kubernetes v1.37.2` gives kubesalvo (sched/bench/contenders.py):
# v1.37's default profile scores DynamicResources, and StorageCapacityScoring is on.
_V137 = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: kubesalvo
    plugins: {score: {enabled: [{name: DynamicResources, weight: 2}]}}
"""
_V134 = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def profile_of(release: str) -> Any:
    if release == "1.37":
        return parse_config(_V137, gates=FeatureGates(storage_capacity_scoring=True))
    return parse_config(_V134)


def run(args: argparse.Namespace) -> dict[str, Any]:
    total = args.bursts * args.max
    state, queue, snapshot = build(args.nodes, args.running, total, args.seed, args.workloads)
    bursts = cut(queue, args.bursts, args.min, args.max, args.seed)
    profile = profile_of(args.release).profiles[0].core
    ties = TieBreak(args.seed)
    digest = hashlib.sha256()
    encode = kernel = 0.0
    pods = placed = 0
    profiler = cProfile.Profile() if args.profile else None
    was = class_cache.ENABLED if class_cache is not None else None
    if class_cache is not None:
        class_cache.ENABLED = args.class_cache
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    results = []

    def one(burst: list[Any]) -> Any:
        workloads = burst_workloads(snapshot, burst) if args.workloads else ()
        return place_burst(state, burst, profile, ties=ties, workloads=workloads)

    async def on_a_loop() -> None:
        for burst in bursts:
            if args.hand_off == "thread":
                results.append(await asyncio.to_thread(one, burst))
            else:
                results.append(one(burst))

    try:
        if args.hand_off == "none":
            results.extend(one(burst) for burst in bursts)
        else:
            asyncio.run(on_a_loop())
    finally:
        if profiler is not None:
            profiler.disable()
        if class_cache is not None:
            class_cache.ENABLED = was
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    for burst, result in zip(bursts, results, strict=True):
        encode += result.encode_seconds
        kernel += result.kernel_seconds
        pods += len(burst)
        placed += result.placed
        digest.update(json.dumps(result.nodes).encode())
    if profiler is not None:
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)
        with open(args.profile, "w") as out:
            out.write(text.getvalue())
        stats.dump_stats(args.profile + ".prof")
    n = max(1, len(bursts))
    return {
        "nodes": args.nodes,
        "running": args.running,
        "release": args.release,
        "bursts": len(bursts),
        "pods": pods,
        "placed": placed,
        "class_cache": args.class_cache if class_cache is not None else None,
        "workloads": args.workloads,
        "hand_off": args.hand_off,
        "profiled": bool(profiler),
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "cpu_ms_per_burst": round(cpu / n * 1e3, 3),
        "cpu_us_per_pod": round(cpu / max(1, pods) * 1e6, 1),
        "encode_ms_per_burst": round(encode / n * 1e3, 3),
        "kernel_ms_per_burst": round(kernel / n * 1e3, 3),
        "digest": digest.hexdigest()[:16],
    }


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--running", type=int, default=20000, help="pods bound at the start")
    parser.add_argument("--bursts", type=int, default=2000)
    parser.add_argument("--min", type=int, default=5, help="fewest pods in a burst")
    parser.add_argument("--max", type=int, default=20, help="most pods in a burst")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--release", choices=["1.34", "1.37"], default="1.37",
        help="the profile kubesalvo bench gives kubesalvo against this release (default 1.37)",
    )  # fmt: skip
    parser.add_argument("--profile", metavar="FILE", help="cProfile the bursts into FILE")
    parser.add_argument("--top", type=int, default=40, help="functions the profile lists")
    parser.add_argument(
        "--no-class-cache", dest="class_cache", action="store_false",
        help="a fresh class cache for every burst (the cost before it)",
    )  # fmt: skip
    parser.add_argument(
        "--workloads", action="store_true",
        help="hand each burst its namespaces' ReplicaSets (the default spread constraints)",
    )  # fmt: skip
    parser.add_argument(
        "--hand-off", choices=["none", "loop", "thread"], default="none",
        help="place from an asyncio loop, on it or through to_thread (default: no loop)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if not 1 <= args.min <= args.max:
        parser.error("--min must be at least 1 and at most --max")
    return args


def main(argv: list[str] | None = None) -> int:
    print(json.dumps(run(parse(sys.argv[1:] if argv is None else argv))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
