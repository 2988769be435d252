"""Scenario files' ``bench`` section and the burst planned as Deployments, Jobs and bare
pods: the same classes as the bare-pod burst, each controller named for its run and
selecting only that run's pods."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from kubesalvo.sched.bench import rollout
from kubesalvo.sched.bench.workload import (
    CREATE_MODES,
    RUN_LABEL,
    WorkloadError,
    burst,
    generate,
    load_scenario,
    load_settings,
    with_pending,
)

E2E = Path(__file__).resolve().parents[3] / "bench" / "e2e"


def test_every_end_to_end_scenario_file_loads_with_its_settings() -> None:
    expected = {
        "basic": ("deployments", 5000, 10000),
        "mixed": ("deployments", 5000, 10000),
        "gangs": ("deployments", 1000, 14000),
        "image-locality": ("deployments", 5000, 10000),
        "scale-up": ("scale-up", 5000, 10000),
        "churn": ("pods", 5000, 35000),
        "large": ("deployments", 15000, 10000),
    }
    for name, (create, nodes, pods) in expected.items():
        scenario = load_scenario(name)
        settings = load_settings(name)
        assert (settings.create, scenario.fleet.nodes, scenario.pod_count) == (create, nodes, pods)
    churn = load_settings("churn")
    assert (churn.rate, churn.duration, churn.lifetime) == (50.0, 300.0, 30.0)
    assert "default profile" in load_settings("gangs").note
    assert load_settings("replicasets") == load_settings("tiny")  # no section: defaults


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("bench:\n  create: helm\n", "bench.create: 'helm'; accepted: pods, deployments"),
        ("bench:\n  rate: -1\n", "bench.rate: expected a positive number"),
        ("bench:\n  lifetime: yes\n", "bench.lifetime: expected a positive number"),
        ("bench:\n  speed: 3\n", "bench.speed: unknown field; accepted: create"),
        ("bench: [1]\n", "bench: expected a mapping"),
        ("bench:\n  devices: 8\n", "bench.devices: expected a mapping, got int"),
        (
            "bench:\n  devices: {gpus: 8}\n",
            "bench.devices.gpus: unknown field; accepted: gpusPerNode",
        ),
        (
            "bench:\n  devices: {gpusPerPod: 0}\n",
            "bench.devices.gpusPerPod: expected an integer from 1",
        ),
        (
            "bench:\n  create: deployments\n  devices: {gpusPerPod: 1}\n",
            "bench.devices: only with create: pods",
        ),
    ],
)
def test_a_bad_bench_section_names_the_field(tmp_path: Path, section: str, message: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text((E2E / "tiny.yaml").read_text() + section)
    with pytest.raises(WorkloadError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_settings(str(path))
    assert set(CREATE_MODES) == {"pods", "deployments", "scale-up", "hpa"}


def test_deployments_make_the_same_pods_as_the_bare_burst() -> None:
    scenario = load_scenario("tiny")
    plan = rollout.plan(scenario, "kubesalvo", "kubesalvo-abc123")
    bare = burst(generate(scenario, "kubesalvo"), "kubesalvo-abc123")
    assert plan.total == len(bare) == 200
    assert (len(plan.deployments), len(plan.jobs), len(plan.pods)) == (4, 0, 0)
    by_app = Counter(pod["metadata"]["labels"]["app"] for pod in bare)
    for deployment in plan.deployments:
        spec = deployment["spec"]
        labels = spec["template"]["metadata"]["labels"]
        assert deployment["metadata"]["name"].endswith("-abc123")
        assert labels[RUN_LABEL] == "kubesalvo-abc123"
        assert "pod-template-hash" not in labels  # the Deployment controller sets its own
        assert spec["selector"]["matchLabels"].items() <= labels.items()
        assert spec["template"]["spec"]["schedulerName"] == "kubesalvo"
        assert by_app[labels["app"]] == spec["replicas"]
    zero = rollout.at_zero(plan)
    assert [d["spec"]["replicas"] for d in zero] == [0] * 4


def test_a_mixed_burst_becomes_deployments_jobs_and_bare_pods() -> None:
    scenario = load_scenario("mixed").resized(nodes=100, pods=400)
    plan = rollout.plan(scenario, "kube-scheduler", "kube-scheduler-0f0f0f")
    assert plan.deployments and plan.jobs and plan.pods
    assert plan.total == 400
    assert rollout.describe(plan) == {
        "deployments": len(plan.deployments),
        "jobs": len(plan.jobs),
        "bare_pods": len(plan.pods),
        "pods": 400,
    }
    for pod in plan.pods:
        assert pod["metadata"]["labels"][RUN_LABEL] == "kube-scheduler-0f0f0f"
        assert pod["metadata"]["name"].endswith("-0f0f0f")
    for job in plan.jobs:
        assert job["spec"]["template"]["metadata"]["labels"][RUN_LABEL] == "kube-scheduler-0f0f0f"


def test_with_pending_resizes_only_the_pending_workloads() -> None:
    churn = load_scenario("churn")
    resized = with_pending(churn, 120)
    running, arrivals = resized.workloads
    assert running.bound and running.pods == 20000
    assert arrivals.pods == 120
    with pytest.raises(WorkloadError, match="no pending workload"):
        with_pending(dataclasses.replace(churn, workloads=(running,)), 5)
