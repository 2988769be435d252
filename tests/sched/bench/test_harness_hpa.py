"""The hpa scenario end to end at a tiny size: a real HorizontalPodAutoscaler scales a
Deployment on the CPU use metrics-server reports from kwok's emulation, the load driver
shares the offered load over the bound pods, and the scheduler places what the HPA adds."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesalvo.sched.bench import contenders, harness, report
from kubesalvo.sched.bench.workload import load_scenario, load_settings
from kubesalvo.sched.cluster import controlplane
from kubesalvo.sched.cluster.controlplane import ControlPlane
from tests.sched.bench.test_harness import _require_binaries
from tests.sched.bench.test_harness_scenarios import SCENARIO, _assert_nothing_left

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BENCH = """\
  create: hpa
  hpa:
    steps: [[0, 100], [1, 3000]]
    duration: 100
    cpu_request: 100
    target_utilization: 50
    min_replicas: 1
    max_replicas: 12
    scale_down_window: 0
"""


def test_a_real_hpa_scales_the_deployment_and_the_scheduler_places_every_replica(
    tmp_path: Path,
) -> None:
    _require_binaries()
    path = tmp_path / "hpa.yaml"
    path.write_text(SCENARIO.format(name="hpa", bench=BENCH))
    settings = load_settings(str(path))
    assert settings.hpa is not None and settings.hpa.max_replicas == 12
    options = harness.Options(
        scenario=load_scenario(str(path)),
        schedulers=(contenders.KUBESALVO,),
        dir=tmp_path / "control-plane",
        timeout=300.0,
        keep=True,
        die_with_parent=True,
        create=settings.create,
        hpa=settings.hpa,
    )
    try:
        result = harness.run(options, lambda message: None)
        _assert_nothing_left(ControlPlane.load(options.dir))
    finally:
        controlplane.stop(options.dir)
    (run,) = result.runs
    samples = run.autoscaling
    assert samples and samples[0]["load_millicores"] == 100
    assert samples[-1]["load_millicores"] == 3000
    # metrics.k8s.io answered (the HPA reports a utilization) and the HPA scaled up.
    assert any(s["utilization_percent"] for s in samples), samples[-5:]
    assert max(s["replicas"] or 0 for s in samples) > 1, samples[-5:]
    assert max(s["desired_replicas"] or 0 for s in samples) <= 12
    # Every replica the HPA asked for was placed, feasibly; the load was shared by them.
    assert run.pods > 1 and run.bound == run.pods, (run.pods, run.bound)
    assert run.feasibility["ok"], run.feasibility
    last = samples[-1]
    assert last["per_pod_millicores"] * last["bound"] >= 3000
    assert len(run.bind_latencies) == run.bound
    report.write_json(result, tmp_path)
    assert report.write_autoscaling_plot(result, tmp_path) == tmp_path / report.AUTOSCALING_FILE
