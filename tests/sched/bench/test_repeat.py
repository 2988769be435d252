"""``--repeat``: the contender order of each round, and the medians and their ratios,
computed from the runs' own figures (made up here; the harness test runs them for real)."""

from __future__ import annotations

import pytest
from rich.console import Console

from kubesalvo.sched.bench import repeat, report
from kubesalvo.sched.bench.results import BenchResult, ProcessUsage, RunResult
from kubesalvo.sched.bench.usage import MACHINE
from tests.sched.bench.test_results import run_with

RAW, KUBESALVO = "raw-bind-events", "kubesalvo"


def test_odd_rounds_keep_the_order_given_and_even_rounds_reverse_it() -> None:
    names = (RAW, KUBESALVO)
    assert [repeat.order(names, n) for n in (1, 2, 3, 4)] == [
        (RAW, KUBESALVO),
        (KUBESALVO, RAW),
        (RAW, KUBESALVO),
        (KUBESALVO, RAW),
    ]
    assert repeat.order((KUBESALVO,), 2) == (KUBESALVO,)


def _run(name: str, number: int, rate: float, p50: float, p99: float, cpu: float) -> RunResult:
    run = run_with([1.0] * 100)
    run.scheduler, run.round_number, run.mode = name, number, "rate"
    run.offered_rate, run.share_of_ceiling = rate, rate / 400
    run.latency = {"p50": p50, "p99": p99}
    others = ("kube-apiserver", "etcd", "kwok", "kube-controller-manager", "bench", MACHINE)
    run.usage = {process: ProcessUsage(cpu_seconds=1.0, peak_rss_bytes=1) for process in others}
    run.usage["scheduler"] = ProcessUsage(cpu_seconds=cpu, peak_rss_bytes=1)
    return run


def _sweep() -> BenchResult:
    # (round, rate) -> raw-bind-events' and kubesalvo's (p50, p99, scheduler CPU s; 100 pods)
    figures = {
        (1, 100.0): ((0.1, 0.5, 1.0), (0.2, 0.4, 2.0)),
        (1, 200.0): ((1.0, 3.0, 1.5), (1.5, 3.5, 1.8)),
        (2, 100.0): ((0.3, 0.9, 1.2), (0.1, 0.6, 1.6)),
        (2, 200.0): ((2.0, 5.0, 1.1), (1.0, 3.2, 1.4)),
        (3, 100.0): ((0.2, 0.7, 0.8), (0.4, 0.8, 1.9)),
        (3, 200.0): ((3.0, 4.0, 1.3), (2.5, 6.0, 1.2)),
    }
    runs = []
    for (number, rate), pair in figures.items():
        for name in repeat.order((RAW, KUBESALVO), number):
            p50, p99, cpu = pair[0] if name == RAW else pair[1]
            runs.append(_run(name, number, rate, p50, p99, cpu))
    scenario = {"name": "sweep", "nodes": 10, "pods": 10}
    return BenchResult("", "", scenario, {}, {}, runs=runs, schedulers=[RAW, KUBESALVO], rounds=3)


def test_medians_per_contender_and_rate_over_the_rounds() -> None:
    result = _sweep()
    entries = repeat.medians(result.runs, result.schedulers)
    assert [(e["offered_pods_per_second"], e["scheduler"]) for e in entries] == [
        (100.0, RAW),
        (100.0, KUBESALVO),
        (200.0, RAW),
        (200.0, KUBESALVO),
    ]
    raw_100, kubesalvo_100, raw_200, kubesalvo_200 = entries
    assert kubesalvo_100["rounds"] == [1, 2, 3]
    assert kubesalvo_100[repeat.P50] == [0.2, 0.1, 0.4]
    assert kubesalvo_100["median"][repeat.P50] == 0.2
    assert kubesalvo_100["median"][repeat.P99] == 0.6
    assert kubesalvo_100["median"][repeat.CPU_PER_POD] == pytest.approx(0.019)
    assert raw_100["median"] == pytest.approx(
        {repeat.P50: 0.2, repeat.P99: 0.7, repeat.CPU_PER_POD: 0.01}
    )
    # The ratio of the medians, not the median of each round's ratio.
    assert kubesalvo_100["against"] == RAW
    assert kubesalvo_100["ratio_of_medians"] == pytest.approx(
        {repeat.P50: 1.0, repeat.P99: round(0.6 / 0.7, 3), repeat.CPU_PER_POD: 1.9}
    )
    assert raw_200["ratio_of_medians"] == {f: 1.0 for f in repeat.FIGURES}
    assert kubesalvo_200["median"][repeat.P99] == 3.5
    assert kubesalvo_200["ratio_of_medians"][repeat.P99] == 0.875
    assert kubesalvo_200["share_of_ceiling"] == 0.5


def test_an_even_number_of_rounds_takes_the_mean_of_the_middle_two() -> None:
    runs = [_run(KUBESALVO, n, 50.0, p50, 1.0, 1.0) for n, p50 in ((1, 0.3), (2, 0.1))]
    (entry,) = repeat.medians(runs, [KUBESALVO])
    assert entry["median"][repeat.P50] == pytest.approx(0.2)


def test_a_figure_missing_from_the_reference_gives_no_ratio() -> None:
    raw = _run(RAW, 1, 50.0, 0.1, 0.2, 1.0)
    raw.bound = 0
    mine = _run(KUBESALVO, 1, 50.0, 0.1, 0.4, 1.0)
    entries = repeat.medians([raw, mine], [RAW, KUBESALVO])
    assert entries[0]["median"][repeat.CPU_PER_POD] is None
    assert entries[1]["ratio_of_medians"] == {
        repeat.P50: 1.0,
        repeat.P99: 2.0,
        repeat.CPU_PER_POD: None,
    }


def test_the_report_shows_each_round_and_the_medians() -> None:
    result = _sweep()
    text = report.markdown(result)
    assert "| offered | contender | rounds |" in text
    assert "| 100.0/s (25%) | kubesalvo | 1, 2, 3 | 0.200 / 0.100 / 0.400 |" in text
    assert "kubesalvo at 100.0/s #2" in text
    assert result.to_json()["medians"] == repeat.medians(result.runs, result.schedulers)
    # The latency-against-load plot draws the medians, one point per rate.
    lines = report.latency_vs_load(result)
    assert lines[KUBESALVO] == [
        (100.0, {"p50": 0.2, "p99": 0.6}),
        (200.0, {"p50": 1.5, "p99": 3.5}),
    ]


def test_the_printed_table_is_followed_by_the_medians_and_each_run_labelled_apart(
    tmp_path,
) -> None:
    console = Console(record=True, width=400)
    report.print_table(_sweep(), console)
    text = console.export_text()
    assert "Medians over 3 rounds (contender order alternating per round)" in text
    assert "ratios against raw-bind-events" in text
    # One line per round and contender in the plots' legends.
    labels = {report.run_label(run, 3) for run in _sweep().runs}
    assert len(labels) == 12
    assert report.write_plot(_sweep(), tmp_path).exists()
