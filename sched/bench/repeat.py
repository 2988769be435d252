"""Repeated runs (``kubesalvo bench --repeat N``): each round's order, and the medians.

N rounds each run every contender at every offered rate (or once, without a rate). The
contenders go in the order given in odd rounds and reversed in even ones (A B, B A, A B,
...), so that neither is always the one that meets what the other left behind, nor always
the one that runs later in the machine's day.

The medians are taken per contender and offered rate over the rounds: of the p50s, of the
p99s and of the scheduler's CPU seconds per bound pod. Each contender's medians are then set
against the first contender's (the first named, e.g. raw-bind-events) at the same rate: the
ratio of the medians, not the median of the ratios, as the goal of issue 33 is stated.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubesalvo.sched.bench.results import RunResult

# The figures whose medians are taken, each read off one run (None: the run has none).
P50 = "p50_seconds"
P99 = "p99_seconds"
CPU_PER_POD = "scheduler_cpu_seconds_per_pod"


def _cpu_per_pod(run: RunResult) -> float | None:
    usage = run.usage.get("scheduler")
    return usage.cpu_seconds / run.bound if usage is not None and run.bound else None


FIGURES: dict[str, Callable[[RunResult], float | None]] = {
    P50: lambda run: run.latency.get("p50"),
    P99: lambda run: run.latency.get("p99"),
    CPU_PER_POD: _cpu_per_pod,
}


def order(schedulers: Sequence[str], round_number: int) -> tuple[str, ...]:
    """The contenders in the order round ``round_number`` (from 1) runs them."""
    return tuple(schedulers) if round_number % 2 else tuple(reversed(schedulers))


def medians(runs: Sequence[RunResult], schedulers: Sequence[str]) -> list[dict[str, Any]]:
    """One entry per offered rate (in the order first run) and contender (in the order
    named): every round's figures, their medians, and the ratio of each median to the first
    contender's at the same rate (None where either side has no figure)."""
    rates: list[tuple[float | None, float | None]] = []
    by_rate: dict[tuple[float | None, float | None], dict[str, list[RunResult]]] = {}
    for run in runs:
        key = (run.offered_rate, run.share_of_ceiling)
        if key not in by_rate:
            rates.append(key)
        by_rate.setdefault(key, {}).setdefault(run.scheduler, []).append(run)
    entries: list[dict[str, Any]] = []
    first = schedulers[0] if schedulers else None
    for key in rates:
        groups = by_rate[key]
        middle = {name: _middles(group) for name, group in groups.items()}
        for name in (n for n in schedulers if n in groups):
            group = sorted(groups[name], key=lambda run: run.round_number)
            reference = middle.get(first) if first is not None else None
            entries.append(
                {
                    "scheduler": name,
                    "offered_pods_per_second": key[0],
                    "share_of_ceiling": key[1],
                    "rounds": [run.round_number for run in group],
                    "outcomes": [run.outcome for run in group],
                    **{f: [_rounded(read(run)) for run in group] for f, read in FIGURES.items()},
                    "median": middle[name],
                    "against": first,
                    "ratio_of_medians": (
                        {f: _ratio(middle[name][f], reference[f]) for f in FIGURES}
                        if reference is not None
                        else None
                    ),
                }
            )
    return entries


def _middles(group: Sequence[RunResult]) -> dict[str, float | None]:
    middles: dict[str, float | None] = {}
    for figure, read in FIGURES.items():
        values = [value for value in map(read, group) if value is not None]
        middles[figure] = _rounded(statistics.median(values)) if values else None
    return middles


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _ratio(mine: float | None, theirs: float | None) -> float | None:
    return round(mine / theirs, 3) if mine is not None and theirs else None
