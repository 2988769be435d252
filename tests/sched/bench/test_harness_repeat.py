"""``kubesalvo bench --rates ... --repeat 2`` at a small size on the real control plane:
raw-bind-events and kubesalvo, the ceiling measured once, two rounds in alternating order,
and the medians in the report computed from the runs' own figures (never their speed).
The replicasets sweep gives every run a control plane of its own (``--fresh``); the churn
form shares one, and every pod is deleted once it lived its lifetime, whichever contender
bound it."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from kubesalvo.sched.bench import contenders, harness, repeat, report
from kubesalvo.sched.bench.results import BenchResult, RunResult
from kubesalvo.sched.bench.workload import load_scenario, load_settings
from kubesalvo.sched.cluster import controlplane
from tests.conftest import newest_release
from tests.sched.bench.test_harness import _require_binaries

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCHEDULERS = (contenders.RAW_BIND_EVENTS, contenders.KUBESALVO)
ORDER = [
    (1, contenders.RAW_BIND_EVENTS),
    (1, contenders.KUBESALVO),
    (2, contenders.KUBESALVO),
    (2, contenders.RAW_BIND_EVENTS),
]
CHURN = """\
name: small-churn
description: arrivals onto 200 nodes already running 200 pods, each living a second
seed: 2
fleet:
  nodes: 200
workloads:
  - name: running
    shape: replicasets
    pods: 200
    classes: 4
    bound: true
  - name: arrivals
    shape: replicasets
    pods: 300
    classes: 3
bench:
  lifetime: 1
"""


def _sweep(out: Path, scenario_file: str, **extra: object) -> BenchResult:
    _require_binaries()
    settings = load_settings(scenario_file)
    scenario = load_scenario(scenario_file)
    options = harness.Options(
        scenario=scenario.resized(200, 300) if settings.lifetime is None else scenario,
        schedulers=SCHEDULERS,
        dir=out / "control-plane",
        settle=20.0,
        timeout=300.0,
        die_with_parent=True,
        kubernetes=newest_release(),
        duration=2.0,
        repeat=2,
        lifetime=settings.lifetime,
        logs=out / "logs",
        **extra,  # type: ignore[arg-type]
    )
    try:
        result = harness.run(options, lambda message: None)
    finally:
        controlplane.stop(options.dir)
    report.write_json(result, out)
    report.write_markdown(result, out)
    return result


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchResult, Path]:
    out = tmp_path_factory.mktemp("repeat")
    return _sweep(out, "replicasets", rates=(0.25,), fresh=True), out


@pytest.fixture(scope="module")
def churn(tmp_path_factory: pytest.TempPathFactory) -> BenchResult:
    out = tmp_path_factory.mktemp("churn")
    (out / "small-churn.yaml").write_text(CHURN)
    return _sweep(out, str(out / "small-churn.yaml"), rates=(0.5,))


def test_the_ceiling_once_then_two_rounds_in_alternating_order(
    sweep: tuple[BenchResult, Path],
) -> None:
    result, _ = sweep
    assert result.ceiling is not None and result.ceiling.round_number == 0
    assert (result.rounds, result.schedulers) == (2, list(SCHEDULERS))
    assert [(run.round_number, run.scheduler) for run in result.runs] == ORDER
    rate = round(0.25 * result.ceiling.binding_pods_per_second, 2)
    for run in result.runs:
        assert (run.mode, run.offered_rate, run.share_of_ceiling) == (harness.RATE, rate, 0.25)
        assert (run.outcome, run.bound) == ("all bound", run.pods)
    # Each run had a control plane of its own: none deleted its pods one by one.
    assert result.ceiling.delete_seconds is None
    assert all(run.delete_seconds is None for run in result.runs)


def test_each_control_planes_log_is_kept_under_the_run_it_served(
    sweep: tuple[BenchResult, Path],
) -> None:
    result, out = sweep
    rate = f"{result.runs[0].offered_rate:g}"
    names = ["ceiling"] + [f"{name}-{rate}-round{n}" for n, name in ORDER[:-1]]
    for name in names:
        assert "Serving securely" in (out / "logs" / f"kube-apiserver-{name}.log").read_text()
    assert (out / "logs" / "kube-apiserver.log").is_file()  # the last run's


def _figures(run: RunResult) -> dict[str, float]:
    return {
        repeat.P50: run.latency["p50"],
        repeat.P99: run.latency["p99"],
        repeat.CPU_PER_POD: run.usage["scheduler"].cpu_seconds / run.bound,
    }


def _assert_medians_of_the_runs(result: BenchResult, saved: dict) -> None:
    """Each contender's medians are those of its runs' figures, in round order, and the
    ratios are its medians over raw-bind-events'."""
    entries = saved["medians"]
    assert [e["scheduler"] for e in entries] == list(SCHEDULERS)
    medians = {}
    for entry in entries:
        runs = sorted(
            (r for r in result.runs if r.scheduler == entry["scheduler"]),
            key=lambda r: r.round_number,
        )
        assert entry["rounds"] == [1, 2]
        assert entry["outcomes"] == [r.outcome for r in runs]
        for figure in repeat.FIGURES:
            values = [_figures(r)[figure] for r in runs]
            assert entry[figure] == pytest.approx(values, abs=1e-6)
            assert entry["median"][figure] == pytest.approx(statistics.median(values), abs=1e-6)
        medians[entry["scheduler"]] = entry["median"]
        assert entry["against"] == contenders.RAW_BIND_EVENTS
    ours, theirs = medians[contenders.KUBESALVO], medians[contenders.RAW_BIND_EVENTS]
    ratios = entries[1]["ratio_of_medians"]
    for figure in repeat.FIGURES:
        assert ratios[figure] == pytest.approx(ours[figure] / theirs[figure], abs=1e-3)
    assert entries[0]["ratio_of_medians"] == {figure: 1.0 for figure in repeat.FIGURES}


def test_the_report_gives_each_run_and_the_medians_of_the_rounds(
    sweep: tuple[BenchResult, Path],
) -> None:
    result, out = sweep
    saved = json.loads((out / report.JSON_FILE).read_text())
    assert [(r["round_number"], r["scheduler"]) for r in saved["runs"]] == ORDER
    _assert_medians_of_the_runs(result, saved)
    table = (out / report.MARKDOWN_FILE).read_text()
    assert "#### Medians over 2 rounds" in table and "ratios against raw-bind-events" in table
    assert "kubesalvo at " in table and " #2 |" in table
    assert len(table.split("| 1, 2 |")) == 3  # one median row per contender


def test_churn_at_a_rate_deletes_each_contenders_pods_after_their_lifetime(
    churn: BenchResult,
) -> None:
    assert churn.scenario["lifetime_seconds"] == 1.0
    assert churn.ceiling is not None and churn.ceiling.lifetime_deletions is None
    assert [(run.round_number, run.scheduler) for run in churn.runs] == ORDER
    for run in churn.runs:
        assert (run.outcome, run.bound) == ("all bound", run.pods)
        # The bench deletes them, whichever contender bound them; the placements are read
        # before the rest is deleted: those still there then are the ones not yet due.
        assert run.lifetime_deletions is not None and 0 < run.lifetime_deletions <= run.bound
        assert 0 <= (run.lifetime_deletions_in_window or 0) <= run.lifetime_deletions
        assert run.feasibility["run_pods_found"] <= run.pods - run.lifetime_deletions
    # On a shared control plane each run's rest is deleted, but the last one's: the
    # control plane is stopped right after it.
    assert [run.delete_seconds is None for run in churn.runs] == [False, False, False, True]
    _assert_medians_of_the_runs(churn, churn.to_json())
    assert "deleted once they lived their lifetime" in report.markdown(churn)
