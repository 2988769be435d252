"""Derived figures of a run: the timeline of bound pods and the latency summary."""

from __future__ import annotations

from kubesalvo.sched.bench.results import BenchResult, ProcessUsage, RunResult, latency_summary


def run_with(bind_times: list[float]) -> RunResult:
    return RunResult(
        scheduler="kubesalvo",
        mode="stream",
        outcome="all bound",
        pods=len(bind_times),
        bound=len(bind_times),
        created_seconds=0.0,
        duration_seconds=bind_times[-1] if bind_times else 0.0,
        pods_per_second=0.0,
        binding_pods_per_second=0.0,
        time_to_first_bind=0.0,
        latency={},
        usage={},
        startup_seconds=0.0,
        delete_seconds=0.0,
        feasibility={},
        settings={},
        log="",
        bind_times=bind_times,
    )


def test_timeline_counts_pods_bound_by_each_second() -> None:
    run = run_with([0.2, 0.9, 1.0, 2.5])
    assert run.timeline() == [(0.0, 0), (1.0, 3), (2.0, 3), (3.0, 4)]


def test_timeline_of_a_run_with_no_bind_is_empty() -> None:
    assert run_with([]).timeline() == []


def test_latency_summary_percentiles() -> None:
    summary = latency_summary([float(i) for i in range(1, 101)])
    assert summary["p50"] == 50.5 and summary["max"] == 100.0 and summary["mean"] == 50.5
    assert summary["p90"] <= summary["p99"] <= summary["max"]
    assert latency_summary([]) == {}


def _run(scheduler: str, pods_per_second: float, p99: float, rate: float | None = None):
    run = run_with([1.0, 2.0])
    run.scheduler = scheduler
    run.pods_per_second = pods_per_second
    run.latency = {"p50": p99 / 2, "p90": p99 * 0.9, "p99": p99, "max": p99}
    run.usage = {
        "scheduler": ProcessUsage(cpu_seconds=1.0, peak_rss_bytes=100),
        "kube-apiserver": ProcessUsage(cpu_seconds=4.0, peak_rss_bytes=200),
        "etcd": ProcessUsage(cpu_seconds=0.5, peak_rss_bytes=50),
    }
    run.feasibility = {"checked": scheduler != "raw-bind", "violation_count": 0}
    run.offered_rate = rate
    return run


def test_summary_gives_per_thousand_cpu_and_ratios_in_the_same_conditions() -> None:
    result = BenchResult("kubesalvo bench", "2026-01-01T00:00:00Z", {}, {}, {})
    result.runs = [
        _run("kubesalvo", 200.0, 2.0, rate=50.0),
        _run("kube-scheduler", 100.0, 8.0, rate=50.0),
        _run("kubesalvo", 150.0, 4.0, rate=100.0),
    ]
    result.ceiling = _run("raw-bind", 400.0, 1.0)
    first, upstream, second = (raw["summary"] for raw in result.to_json()["runs"])
    assert first["cpu_seconds_per_1000_pods"] == {
        "scheduler": 500.0,
        "kube-apiserver": 2000.0,
        "etcd": 250.0,
    }
    assert (first["placed"], first["infeasible"], first["peak_rss_bytes"]) == (2, 0, 100)
    # Same bound pods and CPU in every run here: the CPU per pod ratios are 1.
    same_cpu = {"scheduler_cpu_per_pod": 1.0, "apiserver_cpu_per_pod": 1.0}
    assert first["ratio_to_kube_scheduler"] == {
        "pods_per_second": 2.0,
        "p99_seconds": 0.25,
        **same_cpu,
    }
    assert upstream["ratio_to_kube_scheduler"] == {
        "pods_per_second": 1.0,
        "p99_seconds": 1.0,
        **same_cpu,
    }
    # No kube-scheduler run at 100/s: no ratio to it; raw-bind's ceiling is the reference.
    assert second["ratio_to_kube_scheduler"] is None
    assert second["ratio_to_raw_bind"] == {"pods_per_second": 0.375, "p99_seconds": 4.0, **same_cpu}
    assert second["ratio_to_raw_bind_events"] is None  # it did not run


def test_cpu_per_pod_ratios_to_raw_bind_events() -> None:
    """The fair ceiling: the scheduler's own CPU and the API server's per bound pod, over
    raw-bind-events' in the same conditions."""
    result = BenchResult("kubesalvo bench", "2026-01-01T00:00:00Z", {}, {}, {})
    mine = _run("kubesalvo", 400.0, 2.0)
    raw = _run("raw-bind-events", 500.0, 1.0)
    raw.usage["scheduler"] = ProcessUsage(cpu_seconds=0.5, peak_rss_bytes=80)
    raw.usage["kube-apiserver"] = ProcessUsage(cpu_seconds=5.0, peak_rss_bytes=200)
    result.runs = [mine, raw]
    ratios = result.to_json()["runs"][0]["summary"]["ratio_to_raw_bind_events"]
    assert ratios == {
        "pods_per_second": 0.8,
        "p99_seconds": 2.0,
        "scheduler_cpu_per_pod": 2.0,
        "apiserver_cpu_per_pod": 0.8,
    }


def test_plot_titles_put_the_binaries_on_a_second_line() -> None:
    from kubesalvo.sched.bench import report

    scenario = {"name": "replicasets", "pods": 10_000, "nodes": 5_000}
    binaries = {"binaries": "k8s-v1.37.2_etcd-v3.6.16_kwok-v0.8.0"}
    result = BenchResult("kubesalvo bench", "2026-01-01T00:00:00Z", scenario, binaries, {})
    one_line = report._title(result)
    assert "\n" not in one_line and one_line.endswith("(k8s-v1.37.2_etcd-v3.6.16_kwok-v0.8.0)")
    head, second = report._plot_title(result).split("\n")
    assert f"{head} {second}" == one_line
    assert second == "(k8s-v1.37.2_etcd-v3.6.16_kwok-v0.8.0)"
