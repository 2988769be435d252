"""A contender's start may take longer on a larger cluster: both sides list every node
before they are ready, so the bench's wait grows with the scenario's nodes and never
falls below its floor."""

from __future__ import annotations

from kubesalvo.sched.bench.harness import START_TIMEOUT, start_timeout
from kubesalvo.sched.bench.workload import load_scenario


def test_a_small_cluster_gets_the_floor() -> None:
    assert start_timeout(load_scenario("tiny")) == START_TIMEOUT


def test_the_wait_grows_with_the_nodes_listed() -> None:
    large = load_scenario("large")
    assert start_timeout(large.resized(nodes=50_000)) == 200.0
    assert start_timeout(large.resized(nodes=100_000)) == 2 * start_timeout(
        large.resized(nodes=50_000)
    )
