"""The latency stages read from kubesalvo's saved /metrics, and their rows in the report."""

from __future__ import annotations

import pytest

from kubesalvo.sched.bench import report
from kubesalvo.sched.bench.results import BenchResult
from kubesalvo.sched.bench.stages import BURSTS, POD_WATCHES, WHOLE, read_stages
from kubesalvo.sched.metrics import InformerCollector, SchedulerMetrics
from tests.sched.bench.test_results import run_with


def saved_metrics(tmp_path):
    """What kubesalvo's /metrics says after two bursts of 3 and 1 pods, its pods watch
    opened three times."""
    metrics = SchedulerMetrics()
    for pods, kernel in ((3, 0.002), (1, 0.004)):
        metrics.observe_burst(pods, kernel)
        metrics.observe_stage("gathering", 0.001)
        metrics.observe_stage("encode", 0.0005)
        metrics.observe_stage("kernel", kernel)
        metrics.observe_stage("assume", 0.0001)
    metrics.observe_queue_waits([0.010, 0.020, 0.030, 0.040])
    for in_flight in (0.05, 0.05, 0.05, 0.05):
        metrics.observe_bind_post("kubesalvo", in_flight, since_event=0.1)
    # The pods watch was opened three times (closed twice by the API server), the
    # nodes watch once.
    metrics.registry.register(InformerCollector(lambda: [("pods", 1, 3), ("nodes", 1, 1)]))
    path = tmp_path / "kubesalvo-metrics.txt"
    path.write_bytes(metrics.render())
    return path


def test_stages_are_read_as_counts_and_sums_from_the_saved_metrics(tmp_path):
    stages = read_stages(saved_metrics(tmp_path))
    assert stages[BURSTS] == {"count": 2.0, "sum": 4.0}
    assert stages["kernel"] == {"count": 2.0, "sum": pytest.approx(0.006)}
    assert stages["queue_wait"] == {"count": 4.0, "sum": pytest.approx(0.1)}
    assert stages["bind"] == {"count": 4.0, "sum": pytest.approx(0.2)}
    assert stages[WHOLE] == {"count": 4.0, "sum": pytest.approx(0.4)}
    assert stages[POD_WATCHES] == {"count": 3.0, "sum": 0.0}


def test_a_contender_without_saved_metrics_has_no_stages(tmp_path):
    assert read_stages(tmp_path / "raw-bind-metrics.txt") == {}


def test_the_report_shows_each_stages_mean_and_a_dash_for_runs_without(tmp_path):
    scenario = {"name": "replicasets", "pods": 4, "nodes": 10}
    result = BenchResult("kubesalvo bench", "2026-01-01T00:00:00Z", scenario, {}, {})
    mine, other = run_with([0.1, 0.2, 0.3, 0.4]), run_with([0.1, 0.2, 0.3, 0.4])
    mine.stages = read_stages(saved_metrics(tmp_path))
    result.runs = [mine, other]
    rows = dict(report._stage_rows(result))
    assert rows["bursts (mean size)"] == ["2 (2.0 pods)", "-"]
    assert rows["mean queue wait (per pod)"] == ["25.0 ms", "-"]
    assert rows["mean kernel (per burst)"] == ["3.0 ms", "-"]
    assert rows["mean bind POST in flight (per pod)"] == ["50.0 ms", "-"]
    assert rows["mean creation event → bind POST (per pod)"] == ["100.0 ms", "-"]
    assert rows["pods watches opened (1: never closed)"] == ["3", "-"]


def test_the_report_has_no_stage_rows_when_no_run_has_figures():
    scenario = {"name": "replicasets", "pods": 4, "nodes": 10}
    result = BenchResult("kubesalvo bench", "2026-01-01T00:00:00Z", scenario, {}, {})
    result.runs = [run_with([0.1])]
    assert report._stage_rows(result) == []
