"""Derived figures of a run: the timeline of bound pods and the latency summary."""

from __future__ import annotations

from kubesalvo.sched.bench.results import RunResult, latency_summary


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
