"""The hpa scenario's settings, objects and load schedule (no control plane)."""

from __future__ import annotations

import re

import pytest

from kubesalvo.sched.bench import hpa
from kubesalvo.sched.bench.workload import WorkloadError, load_settings


def test_the_load_holds_each_step_until_the_next():
    settings = hpa.parse({"steps": [[0, 500], [30, 40000], [180, 8000]]}, "bench.hpa")
    assert [settings.load_at(t) for t in (0, 29.9, 30, 179, 180, 1000)] == [
        500, 500, 40000, 40000, 8000, 8000
    ]  # fmt: skip
    assert hpa.parse(None, "bench.hpa") == hpa.HpaSettings()


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"steps": []}, "bench.hpa.steps"),
        ({"steps": [[0, 1], [0, 2]]}, "bench.hpa.steps[1]"),
        ({"steps": [[0, -1]]}, "bench.hpa.steps[0]"),
        ({"steps": [[0, "1"]]}, "bench.hpa.steps[0]"),
        ({"duration": 0}, "bench.hpa.duration"),
        ({"cpu_request": 0}, "bench.hpa.cpu_request"),
        ({"max_replicas": 1.5}, "bench.hpa.max_replicas"),
        ({"min_replicas": 5, "max_replicas": 4}, "min_replicas 5 > max_replicas 4"),
        ({"replicas": 3}, "bench.hpa.replicas: unknown field"),
        ([1], "bench.hpa: expected a mapping"),
    ],
)
def test_a_bad_field_is_refused_by_its_path(section, field):
    with pytest.raises(hpa.HpaSettingsError, match=re.escape(field)):
        hpa.parse(section, "bench.hpa")


def test_the_deployment_is_addressed_to_the_scheduler_and_the_hpa_targets_it():
    settings = hpa.HpaSettings(cpu_request=250, min_replicas=3, max_replicas=9)
    deployment, autoscaler = hpa.objects(settings, "ns", "kubesalvo", {"run": "r1"})
    template = deployment["spec"]["template"]
    assert deployment["spec"]["replicas"] == 3
    assert template["spec"]["schedulerName"] == "kubesalvo"
    assert template["metadata"]["labels"] == {"app": "web", "run": "r1"}
    requests = template["spec"]["containers"][0]["resources"]["requests"]
    assert requests["cpu"] == "250m"
    spec = autoscaler["spec"]
    assert spec["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert (spec["minReplicas"], spec["maxReplicas"]) == (3, 9)
    target = spec["metrics"][0]["resource"]["target"]
    assert target == {"type": "Utilization", "averageUtilization": 50}


def test_the_shipped_scenario_reads_and_hpa_needs_create_hpa(tmp_path):
    settings = load_settings("hpa")
    assert settings.create == "hpa" and settings.hpa is not None
    assert settings.hpa.max_replicas == 300
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nfleet: {nodes: 1}\nworkloads: []\nbench:\n  hpa: {}\n")
    with pytest.raises(WorkloadError, match=re.escape("bench.hpa: only with create: hpa")):
        load_settings(str(path))
    path.write_text(
        "name: s\nfleet: {nodes: 1}\nworkloads: []\nbench:\n  create: hpa\n  hpa: {duration: -1}\n"
    )
    with pytest.raises(WorkloadError, match=re.escape("bench.hpa.duration")):
        load_settings(str(path))
