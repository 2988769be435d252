"""The stress run of issue 28: ``kubesalvo simulate --scenario bench/workloads/stress-100k.yaml``
(1,000,000 mixed pods onto 100,000 nodes) completes, every pod accounted for, and reports
its time, peak memory and the state's memory per node.

The full run is in the ``reliability`` suite (``python3 -m pytest -m reliability -k
stress -s`` prints the figures); the default suite runs the same file resized to 1,000
nodes and 10,000 pods. It runs in its own process, as a user would, so that the peak
RSS is its alone. No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCENARIO = Path(__file__).resolve().parents[3] / "bench" / "workloads" / "stress-100k.yaml"

SMALL = (1_000, 10_000)
FULL = (100_000, 1_000_000)


def simulate(nodes: int, pods: int) -> dict:
    command = [sys.executable, "-m", "kubesalvo.sched.cli", "simulate", "--json"]
    command += ["--scenario", str(SCENARIO)]
    if (nodes, pods) != FULL:
        command += ["--nodes", str(nodes), "--pods", str(pods)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    "scale",
    [SMALL, pytest.param(FULL, marks=pytest.mark.reliability)],
    ids=lambda s: f"{s[0]}x{s[1]}",
)
def test_a_mixed_burst_of_a_million_pods_on_100000_nodes_completes(scale):
    nodes, pods = scale
    summary = simulate(nodes, pods)
    assert summary["nodes"] == nodes and summary["pods"] == pods
    assert summary["placed"] + summary["unplaced"] == pods
    # The mixed shape holds about 2% of pods no node can take, the rest fit the fleet.
    assert summary["placed"] >= 0.9 * pods, summary["placed"]
    assert summary["state_rss_bytes"] > 0 and summary["peak_rss_bytes"] > 0
    print(
        f"\nstress {nodes:,} nodes x {pods:,} pods: {summary['placed']:,} placed, "
        f"{summary['unplaced']:,} unplaced; placement {summary['seconds']:.1f} s wall, "
        f"{summary['cpu_seconds']:.1f} s cpu (kernel {summary['kernel_seconds']:.1f} s), "
        f"{summary['microseconds_per_pod']:.1f} us a pod; generate "
        f"{summary['generate_seconds']:.1f} s, load state {summary['load_seconds']:.1f} s; "
        f"peak RSS {summary['peak_rss_bytes'] / 2**20:,.0f} MiB, state "
        f"{summary['state_rss_bytes'] / 2**20:,.0f} MiB "
        f"({summary['state_rss_bytes'] / nodes / 1024:.1f} KiB a node); "
        f"load average {summary['load_average']:.1f}"
    )
