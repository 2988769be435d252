"""``kubesalvo bench --kubernetes NEWEST --rates ...`` at a tiny size, on a control plane of
the newest shipped release: raw-bind's ceiling measured first, then kube-scheduler with
percentageOfNodesToScore 100 and kubesalvo open-loop at two shares of it. Every figure is
checked for consistency, never for speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesalvo.sched.bench import contenders, harness, report
from kubesalvo.sched.bench.results import BenchResult
from kubesalvo.sched.bench.workload import load_scenario
from kubesalvo.sched.cluster import controlplane
from tests.conftest import newest_release
from tests.sched.bench.test_harness import _require_binaries

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCHEDULERS = (contenders.KUBE_SCHEDULER_ALL_NODES, contenders.KUBESALVO)
SHARES = (0.25, 0.5)
DURATION = 3.0


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchResult, Path]:
    _require_binaries()
    out = tmp_path_factory.mktemp("sweep")
    options = harness.Options(
        scenario=load_scenario("tiny"),
        schedulers=SCHEDULERS,
        dir=out / "control-plane",
        settle=30.0,
        timeout=300.0,
        die_with_parent=True,
        kubernetes=newest_release(),
        rates=SHARES,
        duration=DURATION,
        logs=out / "logs",
    )
    seen: list[tuple[str, int, int, int]] = []
    options.progress = lambda *update: seen.append(update)
    try:
        result = harness.run(options, lambda message: None)
    finally:
        controlplane.stop(options.dir)
    assert seen, "the progress display was never told anything"
    report.write_json(result, out)
    report.write_markdown(result, out)
    report.write_latency_plots(result, out)
    return result, out


def test_every_contender_runs_on_the_newest_release(sweep: tuple[BenchResult, Path]) -> None:
    result, _ = sweep
    assert result.control_plane["kubernetes"] == newest_release()
    assert result.control_plane["versions"]["k8s"] == newest_release()
    upstream = [r for r in result.runs if r.scheduler == contenders.KUBE_SCHEDULER_ALL_NODES]
    for run in upstream:
        assert run.settings["kubernetes"] == newest_release()
        config = run.settings["config"]
        assert config["percentageOfNodesToScore"] == 100
        assert config["clientConnection"]["qps"] == 5000
        assert config["clientConnection"]["burst"] == 5000
        assert config["clientConnection"]["contentType"] == "application/vnd.kubernetes.protobuf"


def test_the_ceiling_is_measured_first_and_each_share_run_by_each_scheduler(
    sweep: tuple[BenchResult, Path],
) -> None:
    result, _ = sweep
    assert result.ceiling is not None
    assert result.ceiling.scheduler == contenders.RAW_BIND
    assert (result.ceiling.mode, result.ceiling.outcome) == ("backlog", "all bound")
    top = result.ceiling.binding_pods_per_second
    assert top > 0
    expected = [(share, name) for share in SHARES for name in SCHEDULERS]
    assert [(r.share_of_ceiling, r.scheduler) for r in result.runs] == expected
    for run in result.runs:
        assert run.mode == harness.RATE
        assert run.offered_rate == round(run.share_of_ceiling * top, 2)
        assert run.pods == max(2, round(run.offered_rate * DURATION))


def test_open_loop_figures_agree_with_one_another(sweep: tuple[BenchResult, Path]) -> None:
    result, _ = sweep
    for run in result.runs:
        assert (run.outcome, run.bound) == ("all bound", run.pods)
        assert run.feasibility["checked"] and run.feasibility["ok"], run.feasibility
        creator = run.creator
        assert creator["pods"] == creator["created"] == run.pods
        assert creator["offered_pods_per_second"] == run.offered_rate
        assert creator["lag_seconds"]["max"] >= creator["lag_seconds"]["p50"] >= 0
        assert len(run.latencies) == run.bound and run.latencies == sorted(run.latencies)
        assert run.latency["max"] == pytest.approx(run.latencies[-1], abs=1e-3)
        keep = run.keep_up
        assert 0 <= keep["bind_share"] <= 1
        assert 0 <= keep["backlog_at_last_create"] <= run.pods
        assert keep["kept_up"] == (keep["bind_share"] >= 0.95)


def test_summary_ratios_and_files(sweep: tuple[BenchResult, Path]) -> None:
    result, out = sweep
    saved = json.loads((out / report.JSON_FILE).read_text())
    assert saved == json.loads(json.dumps(result.to_json()))
    for raw in saved["runs"]:
        summary = raw["summary"]
        assert summary["placed"] == raw["bound"]
        assert summary["infeasible"] == 0
        assert summary["p50_seconds"] <= summary["p90_seconds"] <= summary["p99_seconds"]
        assert set(summary["cpu_seconds_per_1000_pods"]) == {"scheduler", "kube-apiserver", "etcd"}
        assert summary["peak_rss_bytes"] > 0
        # No kube-scheduler (adaptive) run here; raw-bind's ceiling is the reference.
        assert summary["ratio_to_kube_scheduler"] is None
        ceiling = saved["ceiling"]["pods_per_second"]
        assert summary["ratio_to_raw_bind"]["pods_per_second"] == round(
            raw["pods_per_second"] / ceiling, 3
        )
    table = (out / report.MARKDOWN_FILE).read_text()
    assert "| offered pods/s |" in table and "kubesalvo at " in table
    for name in (report.CDF_FILE, report.LOAD_FILE):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = report.latency_vs_load(result)
    assert set(lines) == set(SCHEDULERS)
    assert all(len(points) == len(SHARES) for points in lines.values())
