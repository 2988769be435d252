"""Microbenchmarks of the burst kernel (pytest-benchmark).

Run: ``pytest bench/test_kernels.py --benchmark-only`` (add ``-s`` to see the summary lines).
Each benchmark records placements per second in ``extra_info``; the reference comparison
times the plain-Python oracle and the kernel on the same small cluster and burst in the
same run and records the ratio. Figures are reported, never asserted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from kubesalvo.core.place import plan
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.state import ClusterState
from kubesalvo.core.synthetic.nodes import make_nodes
from kubesalvo.core.synthetic.workloads import make_pods

NODES = 5000
PODS = 10_000


class Best:
    """Calls ``run`` and keeps its smallest wall time; works whether pytest-benchmark
    measures (its rounds) or not (``--benchmark-disable``: one call, no ``stats``), so that
    the suite also runs, small and unmeasured, in the default test run."""

    def __init__(self, run: Callable[[], Any]) -> None:
        self.run = run
        self.seconds = float("inf")

    def __call__(self) -> Any:
        began = time.perf_counter()
        result = self.run()
        self.seconds = min(self.seconds, time.perf_counter() - began)
        return result


def _state(nodes: list[dict]) -> ClusterState:
    state = ClusterState()
    for node in nodes:
        state.add_node(node)
    return state


@pytest.fixture(scope="module")
def fleet() -> list[dict]:
    return make_nodes(NODES, seed=1)


@pytest.mark.parametrize("shape", ["replicasets", "mixed", "distinct"])
def test_plan_burst_on_5000_nodes(benchmark, fleet, shape):
    state = _state(fleet)
    pods = make_pods(PODS, seed=2, shape=shape)
    timed = Best(lambda: plan(state, pods))
    result = benchmark.pedantic(timed, rounds=3, iterations=1)
    assert result.placed > 0
    seconds = timed.seconds
    benchmark.extra_info.update(
        shape=shape,
        nodes=NODES,
        pods=PODS,
        placed=result.placed,
        classes=result.classes,
        placements_per_second=round(PODS / seconds),
        kernel_seconds=round(result.kernel_seconds, 4),
        microseconds_per_pod=round(1e6 * seconds / PODS, 1),
    )
    print(f"\n{shape}: {PODS / seconds:,.0f} placements/s ({1e6 * seconds / PODS:.1f} us/pod)")


@pytest.mark.parametrize("shape", ["replicasets", "mixed"])
def test_kernel_against_reference(benchmark, shape):
    """The same burst through the oracle and the kernel: the speed-up factor."""
    nodes = make_nodes(300, seed=3)
    pods = make_pods(60, seed=4, shape=shape)
    profile = Profile.default()
    started = time.perf_counter()
    ReferenceScheduler(nodes, (), (), profile).place_burst(pods)
    reference_seconds = time.perf_counter() - started
    state = _state(nodes)
    timed = Best(lambda: plan(state, pods, profile))
    benchmark.pedantic(timed, rounds=5, iterations=1)
    kernel_seconds = timed.seconds
    benchmark.extra_info.update(
        shape=shape,
        reference_seconds=round(reference_seconds, 4),
        kernel_seconds=round(kernel_seconds, 5),
        speedup=round(reference_seconds / kernel_seconds, 1),
    )
    print(
        f"\n{shape}: reference {reference_seconds:.3f}s, kernel {kernel_seconds:.4f}s, "
        f"x{reference_seconds / kernel_seconds:.0f}"
    )


@pytest.mark.parametrize("workload", ["mixed", "equal"])
def test_the_bounded_search_ab_runs_small_and_places_as_the_scan(workload):
    """bench/bounded_ab.py at a small scale (the lead runs it at 5,000 and 50,000 nodes on
    the quiet machine): both paths place every pod alike; where every row is equal the
    rows are one twin group, built after a kernel's first 8 searches (those give up for
    the scan), so no later search gives up and each counts the rows still empty as tied
    (at least 300 - k for the k-th pod: a pod may land on a row taken before). The mixed
    burst's several-pod classes scan rows whose terms come from their twin group, and
    the third run (the scans without the groups) places alike too, as does the fourth
    (the spread classes' group orders computed for every class, not copied)."""
    from bench.bounded_ab import compare

    out = compare(workload, 300, 200, 1)
    assert out["same_placements"]
    assert out["searches"] > 0
    assert "bounded_no_twin_scan_cpu_us_per_pod" in out
    assert "bounded_no_order_cache_cpu_us_per_pod" in out
    if workload == "mixed":
        assert out["twin_scanned_rows"] > 0
        assert out["orders_copied"] > 0
    if workload == "equal":
        assert out["searches_given_up"] == 8
        assert out["twin_groups"] == 1
        assert out["twin_ties_per_search"] >= sum(300 - k for k in range(8, 200)) / 200
