"""The whole benchmark on a real control plane of its own, at a tiny size: every contender
binds the whole burst, the placements pass the independent check, the figures agree with
one another, the files are written and nothing is left behind. Speeds are never asserted."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

from kubesalvo.sched.bench import contenders, harness, report
from kubesalvo.sched.bench.results import BenchResult, summary
from kubesalvo.sched.bench.workload import RUN_LABEL, load_scenario
from kubesalvo.sched.cluster import build, controlplane
from kubesalvo.sched.cluster.controlplane import ControlPlane

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCHEDULERS = (contenders.KUBESALVO, contenders.KUBE_SCHEDULER, contenders.RAW_BIND)
BACKLOG_SCHEDULERS = (
    contenders.KUBE_SCHEDULER,
    contenders.KUBE_SCHEDULER_EXTENDER,
    contenders.KUBESALVO,
    contenders.RAW_BIND_EVENTS,
)
USAGE_KEYS = {"scheduler", *harness.CONTROL_PLANE, harness.BENCH, "machine"}
# The backlog runs give the schedulers the last CPU and the control plane the others (on a
# one-CPU machine there is nothing to split: they share it).
USABLE_CPUS = sorted(os.sched_getaffinity(0))
SCHEDULER_CPUS = frozenset(USABLE_CPUS[-1:]) if len(USABLE_CPUS) > 1 else None


def _require_binaries() -> None:
    if build.is_complete(build.bin_dir()) or shutil.which("go") is not None:
        return
    reason = "the control-plane binaries are not built and `go` is not on PATH"
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def bench(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> tuple[BenchResult, Path, Path]:
    """One run of all three contenders on bench/e2e/tiny.yaml (50 nodes, 200 pods); the
    control plane is kept until the module's tests have looked at it. It is stopped by a
    finalizer registered before it starts (whatever fails after), and dies with this
    process in any case."""
    _require_binaries()
    out = tmp_path_factory.mktemp("bench")
    options = harness.Options(
        scenario=load_scenario("tiny"),
        schedulers=SCHEDULERS,
        dir=out / "control-plane",
        settle=30.0,
        timeout=300.0,
        keep=True,
        die_with_parent=True,
        logs=out / "logs",
    )
    request.addfinalizer(lambda: controlplane.stop(options.dir))
    result = harness.run(options, lambda message: None)
    report.write_json(result, out)
    report.write_plot(result, out)
    return result, out, options.dir


@pytest.fixture(scope="module")
def backlog(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchResult, Path]:
    """kubesalvo, kube-scheduler, kube-scheduler with kubesalvo as its extender and
    raw-bind-events in backlog mode, each on a fresh control plane with all 200 pods
    waiting; the results folder's logs."""
    _require_binaries()
    out = tmp_path_factory.mktemp("backlog")
    options = harness.Options(
        scenario=load_scenario("tiny"),
        schedulers=BACKLOG_SCHEDULERS,
        dir=out / "control-plane",
        settle=30.0,
        timeout=300.0,
        mode=harness.BACKLOG,
        fresh=True,
        scheduler_cpus=SCHEDULER_CPUS,
        die_with_parent=True,
        logs=out / "logs",
    )
    return harness.run(options, lambda message: None), out / "logs"


def test_every_contender_binds_the_whole_burst(bench: tuple[BenchResult, Path, Path]) -> None:
    result, _, _ = bench
    assert [run.scheduler for run in result.runs] == list(SCHEDULERS)
    for run in result.runs:
        assert (run.outcome, run.pods, run.bound, run.pending) == ("all bound", 200, 200, 0)


def test_scheduled_placements_pass_the_independent_check(
    bench: tuple[BenchResult, Path, Path],
) -> None:
    result, _, _ = bench
    for run in result.runs:
        if run.scheduler == contenders.RAW_BIND:
            assert run.feasibility == {
                "checked": False,
                "why": "binds without scheduling",
                "run_pods_found": 200,
                "run_pods_unbound": 0,
            }
            continue
        assert run.feasibility["checked"] and run.feasibility["ok"], run.feasibility
        assert run.feasibility["pods_checked"] == run.feasibility["run_pods_found"] == 200
        assert run.feasibility["run_pods_unbound"] == 0
        assert 0 < run.feasibility["nodes_used"] <= 50
        quality = run.feasibility["quality"]
        assert 0 < quality["nodes_used"] <= run.feasibility["nodes_used"]
        assert quality["cpu_share_sd"] >= 0 and quality["node_skew"] >= 1
    text = report.markdown(result)
    assert "| nodes holding the run's pods |" in text
    assert "| worst skew per owner: zone / node |" in text


def test_figures_agree_with_one_another(bench: tuple[BenchResult, Path, Path]) -> None:
    result, _, _ = bench
    for run in result.runs:
        assert run.mode == "stream"
        assert len(run.bind_times) == run.bound and run.bind_times == sorted(run.bind_times)
        assert len(run.create_times) == run.pods
        assert run.time_to_first_bind == run.bind_times[0]
        assert run.duration_seconds == run.bind_times[-1]
        assert run.pods_per_second == round(run.bound / run.duration_seconds, 1)
        assert run.latency["p50"] <= run.latency["p90"] <= run.latency["p99"] <= run.latency["max"]
        timeline = run.timeline()
        assert timeline[-1][1] == run.bound
        assert [count for _, count in timeline] == sorted(count for _, count in timeline)
        assert set(run.usage) == USAGE_KEYS
        # Binding 200 pods takes each scheduler and the API server some CPU; every figure
        # is a real measurement, never negative.
        assert run.usage["scheduler"].cpu_seconds > 0
        assert run.usage["kube-apiserver"].cpu_seconds > 0
        assert all(usage.cpu_seconds >= 0 for usage in run.usage.values())
        assert run.usage["scheduler"].peak_rss_bytes > 0
        assert Path(run.log).is_file()


def test_settings_say_how_each_side_was_configured(bench: tuple[BenchResult, Path, Path]) -> None:
    result, _, _ = bench
    assert "--enable-priority-and-fairness=false" in result.control_plane["flags"]
    assert "--max-requests-inflight=0" in result.control_plane["flags"]
    by_name = {run.scheduler: run for run in result.runs}
    upstream = by_name[contenders.KUBE_SCHEDULER].settings["config"]
    assert upstream["clientConnection"]["qps"] == 5000
    assert upstream["profiles"] == [{"schedulerName": contenders.KUBE_SCHEDULER}]
    ours = by_name[contenders.KUBESALVO].settings["config"]
    assert ours["clientConnection"]["burst"] == 5000
    assert ours["profiles"] == [{"schedulerName": contenders.KUBESALVO}]


def test_results_file_and_plot_are_written(bench: tuple[BenchResult, Path, Path]) -> None:
    result, out, _ = bench
    saved = json.loads((out / report.JSON_FILE).read_text())
    assert saved == json.loads(json.dumps(result.to_json()))
    assert [run["pending"] for run in saved["runs"]] == [0, 0, 0]
    assert (out / report.PLOT_FILE).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _bound_at_first_attempt(logs: Path) -> float:
    """The pods kubesalvo's saved /metrics counts as scheduled (its SLI histogram)."""
    text = (logs / f"{contenders.KUBESALVO}-metrics.txt").read_text()
    (count,) = [
        line.split()[-1]
        for line in text.splitlines()
        if line.startswith("scheduler_pod_scheduling_sli_duration_seconds_count")
    ]
    return float(count)


def test_kubesalvos_metrics_are_saved_when_it_stops(bench: tuple[BenchResult, Path, Path]) -> None:
    # Its histograms say where a run's latency went (queue to bound, attempts, requests).
    _, out, _ = bench
    assert _bound_at_first_attempt(out / "logs") == 200  # every pod of tiny.yaml


def test_the_report_shows_where_kubesalvos_time_went_by_stage(
    bench: tuple[BenchResult, Path, Path],
) -> None:
    result, _, _ = bench
    (mine,) = [run for run in result.runs if run.scheduler == contenders.KUBESALVO]
    # Every pod of tiny.yaml once in each per-pod stage and in the whole.
    for stage in ("queue_wait", "bind", "event_to_bind"):
        assert mine.stages[stage]["count"] == 200, stage
    assert mine.stages["bursts"]["sum"] == 200  # pods placed, over all bursts
    for stage in ("gathering", "encode", "kernel", "assume"):
        assert mine.stages[stage]["count"] == mine.stages["bursts"]["count"], stage
    assert all(not run.stages for run in result.runs if run is not mine)
    text = report.markdown(result)
    assert "| mean creation event → bind POST (per pod) |" in text
    assert "| mean kernel (per burst) |" in text


def test_scheduler_cpus_keep_each_scheduler_apart_from_the_control_plane(
    backlog: tuple[BenchResult, Path],
) -> None:
    result, _ = backlog
    if SCHEDULER_CPUS is None:  # one CPU: the option refuses to split it
        with pytest.raises(ValueError, match="leaves no CPU for the control plane"):
            harness.split_cpus(frozenset(USABLE_CPUS))
        return
    for run in result.runs:
        assert run.settings["cpus"] == sorted(SCHEDULER_CPUS), run.scheduler
        assert run.settings["control_plane_cpus"] == USABLE_CPUS[:-1]
    # The bench's own thread has every CPU back.
    assert sorted(os.sched_getaffinity(0)) == USABLE_CPUS


def test_with_fresh_each_contender_has_a_control_plane_of_its_own(
    backlog: tuple[BenchResult, Path],
) -> None:
    # Each earlier one's API server log is kept under its contender's name, the last one's
    # as usual; each started with the scenario's nodes (every run bound its burst).
    result, logs = backlog
    names = [run.scheduler for run in result.runs]
    for name in names[:-1]:
        assert "Serving securely" in (logs / f"kube-apiserver-{name}.log").read_text()
    assert not (logs / f"kube-apiserver-{names[-1]}.log").exists()
    assert (logs / "kube-apiserver.log").is_file()


def test_kubesalvos_metrics_are_saved_in_backlog_mode_too(
    backlog: tuple[BenchResult, Path],
) -> None:
    # There the measurement starts kubesalvo; it must live until it is stopped and
    # scraped, not end with the measurement's thread.
    _, logs = backlog
    assert _bound_at_first_attempt(logs) == 200


def test_no_burst_pod_outlives_its_run_and_no_contender_keeps_running(
    bench: tuple[BenchResult, Path, Path],
) -> None:
    _, _, folder = bench
    cp = ControlPlane.load(folder)
    listing = cp.call(
        lambda client: client.request("GET", "/api/v1/pods", params={"labelSelector": RUN_LABEL})
    )
    assert listing["items"] == []
    assert not set(cp.pids) & set(SCHEDULERS)
    nodes = asyncio.run(_count_nodes(cp))
    assert nodes == 50


async def _count_nodes(cp: ControlPlane) -> int:
    async with cp.client() as client:
        listing = await client.request("GET", "/api/v1/nodes")
    return len(listing["items"])


def test_backlog_mode_times_each_scheduler_from_its_start(
    backlog: tuple[BenchResult, Path],
) -> None:
    result, _ = backlog
    for run in result.runs:
        assert (run.mode, run.outcome, run.bound) == ("backlog", "all bound", 200)
        if run.scheduler != contenders.RAW_BIND_EVENTS:  # it binds without deciding
            assert run.feasibility["ok"], run.feasibility
        # Nothing can be bound before the scheduler is started: the clock starts with it,
        # and its start (listing nodes and the waiting pods) is inside the measured time.
        assert 0 < run.time_to_first_bind <= run.duration_seconds
        assert run.create_times == []
        assert run.usage["scheduler"].cpu_seconds > 0
        # What the API server served in the window, from its own counters: one binding
        # per pod (a retried one would add), and each bind's watch events; the burst's
        # creation (with its events) came before the clock and its settling.
        assert 1.0 <= run.api_traffic["POST pods/binding"] < 1.1, run.api_traffic
        assert run.api_traffic["watch events: pods"] >= 1.0
        assert "POST pods" not in run.api_traffic
    assert [run.scheduler for run in result.runs] == list(BACKLOG_SCHEDULERS)


def test_kube_scheduler_with_the_extender_asks_it_about_every_pod(
    backlog: tuple[BenchResult, Path],
) -> None:
    """The extender contender: kube-scheduler's configuration names the extender, whose
    own process is sampled apart (and asked: it took CPU), and whose log shows it served."""
    by_name = {run.scheduler: run for run in backlog[0].runs}
    run = by_name[contenders.KUBE_SCHEDULER_EXTENDER]
    (entry,) = run.settings["config"]["extenders"]
    assert entry["nodeCacheCapable"] is True
    assert (entry["filterVerb"], entry["prioritizeVerb"]) == ("filter", "prioritize")
    assert "kubesalvo.sched.cli extender" in run.settings["extender"]["command"]
    assert set(run.usage) == USAGE_KEYS | {contenders.EXTENDER}
    assert run.usage[contenders.EXTENDER].cpu_seconds > 0
    figures = summary(run, by_name[contenders.KUBE_SCHEDULER], None)
    assert figures["cpu_seconds_per_1000_pods"][contenders.EXTENDER] > 0
    # The others have no extender.
    assert contenders.EXTENDER not in by_name[contenders.KUBE_SCHEDULER].usage
    assert "extenders" not in by_name[contenders.KUBE_SCHEDULER].settings["config"]


def test_raw_bind_events_is_the_reference_kubesalvo_is_compared_with(
    backlog: tuple[BenchResult, Path],
) -> None:
    """raw-bind-events binds without deciding (its placements are not checked) and every
    other run's summary gives its ratios to it: pods/s, p99 and CPU per pod, the
    scheduler's own and the API server's."""
    by_name = {run.scheduler: run for run in backlog[0].runs}
    raw = by_name[contenders.RAW_BIND_EVENTS]
    assert raw.feasibility["checked"] is False and raw.feasibility["run_pods_unbound"] == 0
    assert "--events" in raw.settings["command"]
    assert "one binding and one Scheduled event" in raw.settings["notes"]
    document = backlog[0].to_json()
    for run in document["runs"]:
        ratios = run["summary"]["ratio_to_raw_bind_events"]
        assert set(ratios) == {
            "pods_per_second",
            "p99_seconds",
            "scheduler_cpu_per_pod",
            "apiserver_cpu_per_pod",
        }
        assert all(value is not None and value > 0 for value in ratios.values()), ratios
    mine = next(r for r in document["runs"] if r["scheduler"] == contenders.RAW_BIND_EVENTS)
    assert mine["summary"]["ratio_to_raw_bind_events"]["pods_per_second"] == 1.0
