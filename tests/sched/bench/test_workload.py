"""Choosing a benchmark's burst: scenario files by name or path, bare shapes, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesalvo.sched.bench.workload import (
    RUN_LABEL,
    WorkloadError,
    burst,
    generate,
    load_scenario,
    pod_key,
)


def test_a_scenario_is_found_by_name_in_the_bench_folders() -> None:
    assert load_scenario("tiny").fleet.nodes == 50
    assert load_scenario("replicasets-5k.yaml").pod_count == 10_000


def test_a_scenario_file_is_read_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nfleet: {nodes: 3}\nworkloads: [{shape: distinct, pods: 7}]\n")
    scenario = load_scenario(str(path))
    assert (scenario.name, scenario.fleet.nodes, scenario.pod_count) == ("mine", 3, 7)


def test_a_shape_name_gives_ten_thousand_pods_on_five_thousand_nodes() -> None:
    scenario = load_scenario("mixed")
    assert (scenario.fleet.nodes, scenario.pod_count) == (5000, 10_000)
    assert scenario.workloads[0].shape == "mixed"


def test_an_unknown_workload_is_refused_with_what_is_accepted() -> None:
    with pytest.raises(WorkloadError) as refused:
        load_scenario("no-such-thing")
    message = str(refused.value)
    assert "'no-such-thing'" in message and "tiny" in message and "replicasets" in message


def test_every_contender_gets_the_same_pods_but_its_own_scheduler_name() -> None:
    scenario = load_scenario("tiny")
    one, two = generate(scenario, "kubesalvo"), generate(scenario, "kube-scheduler")
    assert [pod_key(p) for p in one.pending_pods()] == [pod_key(p) for p in two.pending_pods()]
    assert {p["spec"]["schedulerName"] for p in two.pending_pods()} == {"kube-scheduler"}


def test_burst_labels_copies_and_leaves_the_generated_pods_alone() -> None:
    cluster = generate(load_scenario("tiny"), "kubesalvo")
    pods = burst(cluster, "kubesalvo-abc123")
    assert len(pods) == 200
    assert all(p["metadata"]["labels"][RUN_LABEL] == "kubesalvo-abc123" for p in pods)
    assert all(RUN_LABEL not in p["metadata"]["labels"] for p in cluster.pending_pods())


def test_each_run_names_its_pods_apart_from_other_runs() -> None:
    cluster = generate(load_scenario("tiny"), "kubesalvo")
    original = [p["metadata"]["name"] for p in cluster.pending_pods()]
    pods = burst(cluster, "kube-scheduler-0f1e2d")
    assert [p["metadata"]["name"] for p in pods] == [f"{name}-0f1e2d" for name in original]
    assert [p["metadata"]["name"] for p in cluster.pending_pods()] == original
