"""A benchmark's results for people and programs: a rich table, a JSON file, a plot.

The table puts the contenders side by side (throughput, latency, CPU seconds of the
scheduler and of the control plane, memory, the placement check, where kubesalvo's time
went by stage, from the /metrics it left) and says under it which
server settings were used and how busy the machine was. ``results.json`` holds everything,
with every pod's bind time; ``results.md`` is the table in Markdown (for RESULTS.md);
``bound-over-time.png`` plots bound pods against time since the first creation, one line
per contender, with its creations dashed; ``latency-cdf.png`` the distribution of each
run's latency; ``latency-vs-load.png`` (open-loop runs) p50 and p99 latency against the
offered rate, one line per scheduler; ``autoscaling.png`` (the hpa scenario) the load,
replicas, pending pods and scheduling latency over time, per scheduler.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kubesalvo.sched.bench import repeat
from kubesalvo.sched.bench.contenders import EXTENDER
from kubesalvo.sched.bench.results import BenchResult, RunResult, summary
from kubesalvo.sched.bench.stages import BURSTS, POD_WATCHES, WHOLE
from kubesalvo.sched.bench.usage import MACHINE

JSON_FILE = "results.json"
MARKDOWN_FILE = "results.md"
PLOT_FILE = "bound-over-time.png"
CDF_FILE = "latency-cdf.png"
LOAD_FILE = "latency-vs-load.png"
AUTOSCALING_FILE = "autoscaling.png"
# Width of the windows the autoscaling plot averages latency over (seconds).
LATENCY_WINDOW = 10.0


def _mib(size: int) -> str:
    return f"{size / 2**20:.0f} MiB"


def _check(run: RunResult) -> str:
    checked = run.feasibility
    if not checked.get("checked"):
        return "not checked"
    return "ok" if checked["ok"] else f"[red]{checked['violation_count']} violations[/red]"


def run_label(run: RunResult, rounds: int = 1) -> str:
    label = f"{run.scheduler} at {run.offered_rate:,.1f}/s" if run.offered_rate else run.scheduler
    return f"{label} #{run.round_number}" if rounds > 1 else label


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _per_pod_ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.2f}"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


MEDIAN_HEADER = (
    "offered",
    "contender",
    "rounds",
    "p50 s each",
    "p99 s each",
    "CPU ms/pod each",
    "median p50 s",
    "median p99 s",
    "median CPU ms/pod",
    "ratio of medians p50 / p99 / CPU",
)


def median_rows(result: BenchResult) -> list[list[str]]:
    """The medians over ``--repeat``'s rounds (bench.repeat), one row per offered rate and
    contender: each round's p50, p99 and scheduler CPU per pod (in round order), their
    medians, and the medians' ratios to the first contender's at that rate."""
    rows = []
    for entry in repeat.medians(result.runs, result.schedulers):
        rate, share = entry["offered_pods_per_second"], entry["share_of_ceiling"]
        offered = f"{rate:,.1f}/s" if rate else "-"
        if share:
            offered += f" ({share:.0%})"
        middle, ratios = entry["median"], entry["ratio_of_medians"] or {}
        rows.append(
            [
                offered,
                entry["scheduler"],
                ", ".join(str(number) for number in entry["rounds"]),
                " / ".join(map(_seconds, entry[repeat.P50])),
                " / ".join(map(_seconds, entry[repeat.P99])),
                " / ".join(map(_per_pod_ms, entry[repeat.CPU_PER_POD])),
                _seconds(middle[repeat.P50]),
                _seconds(middle[repeat.P99]),
                _per_pod_ms(middle[repeat.CPU_PER_POD]),
                " / ".join(_times(ratios.get(f)) for f in repeat.FIGURES),
            ]
        )
    return rows


def _median_title(result: BenchResult) -> str:
    against = result.schedulers[0] if result.schedulers else ""
    return (
        f"Medians over {result.rounds} rounds (contender order alternating per round); "
        f"ratios against {against}"
    )


def _title(result: BenchResult) -> str:
    scenario = result.scenario
    mode = result.runs[0].mode if result.runs else ""
    size = f"{scenario['pods']:,} pods" if mode != "rate" else "pods at a fixed rate"
    return (
        f"{scenario['name']}: {size} onto {scenario['nodes']:,} kwok nodes, "
        f"{mode} mode ({result.control_plane.get('binaries', '')})"
    )


def _plot_title(result: BenchResult) -> str:
    """``_title`` on two lines, the binaries on the second (one line overflowed the figure)."""
    head, _, binaries = _title(result).rpartition(" (")
    return f"{head}\n({binaries}"


def _rate_rows(result: BenchResult) -> list[tuple[str, list[str]]]:
    """The open-loop rows: the schedule, how closely the creator held it, keeping up."""
    runs = result.runs
    if not any(r.offered_rate for r in runs):
        return []

    def lag(r: RunResult, q: str) -> str:
        return f"{r.creator.get('lag_seconds', {}).get(q, 0) * 1000:.0f} ms"

    def share(r: RunResult) -> str:
        return f"{r.share_of_ceiling:.0%}" if r.share_of_ceiling else ""

    return [
        ("offered pods/s", [f"{r.offered_rate or 0:,.1f} {share(r)}".strip() for r in runs]),
        (
            "achieved create pods/s",
            [f"{r.creator.get('achieved_pods_per_second', 0):,.1f}" for r in runs],
        ),
        ("creator lag p99 / max", [f"{lag(r, 'p99')} / {lag(r, 'max')}" for r in runs]),
        (
            "bound while creating / created",
            [f"{r.keep_up.get('bind_share', 0):.1%}" for r in runs],
        ),
        (
            "backlog at last create",
            [f"{r.keep_up.get('backlog_at_last_create', 0):,}" for r in runs],
        ),
        ("kept up", ["yes" if r.keep_up.get("kept_up") else "no" for r in runs]),
    ]


def _quality_rows(result: BenchResult) -> list[tuple[str, list[str]]]:
    """Placement quality (sched/bench/quality.py), for runs whose placements were read."""
    quality = [r.feasibility.get("quality") or {} for r in result.runs]
    if not any(quality):
        return []

    def cells(render) -> list[str]:
        return [render(q) if q else "-" for q in quality]

    def skew(value: int | None) -> str:
        return "-" if value is None else str(value)

    return [
        ("nodes holding the run's pods", cells(lambda q: f"{q['nodes_used']:,}")),
        ("cpu share over all nodes: sd", cells(lambda q: f"{q['cpu_share_sd']:.2f} pp")),
        ("cpu/memory imbalance (mean)", cells(lambda q: f"{q['imbalance']:.2f} pp")),
        (
            "worst skew per owner: zone / node",
            cells(lambda q: f"{skew(q['zone_skew'])} / {skew(q['node_skew'])}"),
        ),
    ]


def _rows(result: BenchResult) -> list[tuple[str, list[str]]]:
    rows: list[tuple[str, list[str]]] = [
        ("bound", [f"{r.bound:,}/{r.pods:,} ({r.outcome})" for r in result.runs]),
        ("pods/s (clock start → last bind)", [f"{r.pods_per_second:,.0f}" for r in result.runs]),
        ("pods/s (first → last bind)", [f"{r.binding_pods_per_second:,.0f}" for r in result.runs]),
        ("creating took", [f"{r.created_seconds:.2f}s" for r in result.runs]),
        ("last bind at", [f"{r.duration_seconds:.2f}s" for r in result.runs]),
        ("time to first bind", [f"{r.time_to_first_bind * 1000:.0f} ms" for r in result.runs]),
    ]
    rows += _rate_rows(result)
    if any(r.lifetime_deletions is not None for r in result.runs):
        rows.append(
            (
                "deleted once they lived their lifetime: by the last bind / all",
                [
                    f"{r.lifetime_deletions_in_window or 0:,} / {r.lifetime_deletions or 0:,}"
                    for r in result.runs
                ],
            )
        )
    for q in ("p50", "p90", "p99", "max"):
        rows.append(
            (f"latency {q} (created → bound)", [f"{r.latency.get(q, 0):.3f}s" for r in result.runs])
        )
    for process in ("scheduler", "kube-apiserver", "etcd", "kwok", "kube-controller-manager"):
        cells = [f"{r.usage[process].cpu_seconds:.1f}" for r in result.runs]
        rows.append((f"CPU s: {process}", cells))
    if any(EXTENDER in r.usage for r in result.runs):
        cells = [
            f"{r.usage[EXTENDER].cpu_seconds:.1f}" if EXTENDER in r.usage else "-"
            for r in result.runs
        ]
        rows.append((f"CPU s: {EXTENDER} (kubesalvo extender)", cells))
    rows.append(
        (
            "CPU s: bench (create + watch)",
            [f"{r.usage['bench'].cpu_seconds:.1f}" for r in result.runs],
        )
    )
    rows.append(
        ("CPU s: whole machine", [f"{r.usage[MACHINE].cpu_seconds:.1f}" for r in result.runs])
    )
    rows.append(
        ("peak RSS: scheduler", [_mib(r.usage["scheduler"].peak_rss_bytes) for r in result.runs])
    )
    rows.append(
        (
            "peak RSS: kube-apiserver",
            [_mib(r.usage["kube-apiserver"].peak_rss_bytes) for r in result.runs],
        )
    )
    rows.append(
        (
            "scheduler start (to /readyz: cluster listed, state built)",
            [f"{r.startup_seconds:.1f}s" for r in result.runs],
        )
    )
    rows.append(("placements", [_check(r) for r in result.runs]))
    rows += _quality_rows(result)
    rows += _stage_rows(result)
    rows += _traffic_rows(result)
    others = ["kube_scheduler", "raw_bind"]
    if any(run.scheduler == "raw-bind-events" for run in result.runs):
        others.append("raw_bind_events")
    for other in others:
        cells = []
        for run in result.runs:
            figures = summary(
                run,
                result.reference(run, "kube-scheduler"),
                result.raw(run),
                result.reference(run, "raw-bind-events"),
            )
            ratios = figures[f"ratio_to_{other}"] or {}
            pps, p99 = ratios.get("pods_per_second"), ratios.get("p99_seconds")
            cells.append(f"{pps or 0:.2f} / {p99 or 0:.2f}" if ratios else "")
        rows.append((f"vs {other.replace('_', '-')}: pods/s / p99", cells))
    return rows


# The stage rows' labels, in the order a pod meets the stages (bench.stages).
STAGE_LABELS = {
    "queue_wait": "queue wait (per pod)",
    "gathering": "gathering window (per burst)",
    "encode": "encode (per burst)",
    "kernel": "kernel (per burst)",
    "assume": "assume (per burst)",
    "placing": "popped → binds handed over (per burst)",
    "bind_wait": "bind handed over → POST sent (per pod)",
    "bind": "bind POST in flight (per pod)",
    WHOLE: "creation event → bind POST (per pod)",
}


def _stage_rows(result: BenchResult) -> list[tuple[str, list[str]]]:
    """Where kubesalvo's time went (its saved /metrics, bench.stages): the bursts and
    their mean size, then each stage's mean; "-" for a run without the figures."""
    runs = result.runs
    if not any(r.stages for r in runs):
        return []

    def bursts(r: RunResult) -> str:
        figures = r.stages.get(BURSTS)
        if not figures or not figures["count"]:
            return "-"
        return f"{figures['count']:,.0f} ({figures['sum'] / figures['count']:.1f} pods)"

    def mean(r: RunResult, stage: str) -> str:
        figures = r.stages.get(stage)
        if not figures or not figures["count"]:
            return "-"
        return f"{figures['sum'] / figures['count'] * 1000:.1f} ms"

    def watches(r: RunResult) -> str:
        figures = r.stages.get(POD_WATCHES)
        return f"{figures['count']:,.0f}" if figures else "-"

    rows = [("bursts (mean size)", [bursts(r) for r in runs])]
    for stage, label in STAGE_LABELS.items():
        rows.append((f"mean {label}", [mean(r, stage) for r in runs]))
    # More than one: the API server closed the scheduler's pods watch as too slow.
    rows.append(("pods watches opened (1: never closed)", [watches(r) for r in runs]))
    return rows


def _traffic_rows(result: BenchResult, most: int = 8) -> list[tuple[str, list[str]]]:
    """The API server's requests and watch events per pod (bench.apitraffic), the
    ``most`` largest over the runs, in one row each."""
    largest: dict[str, float] = {}
    for run in result.runs:
        for key, value in run.api_traffic.items():
            largest[key] = max(largest.get(key, 0.0), value)
    keys = sorted(largest, key=lambda key: (-largest[key], key))[:most]
    return [
        (f"API per pod: {key}", [f"{r.api_traffic.get(key, 0.0):.2f}" for r in result.runs])
        for key in keys
    ]


def _caption(result: BenchResult) -> str:
    cpus = result.machine.get("cpus")
    load = result.machine.get("load_average")
    flags = " ".join(result.control_plane.get("flags", []))
    ceiling = ""
    note = f" Scenario note: {result.scenario['note']}" if result.scenario.get("note") else ""
    if result.scenario.get("create", "pods") != "pods":
        note = f" Pods created through {result.scenario['create']}.{note}"
    if result.scenario.get("lifetime_seconds"):
        note += f" Each pod deleted {result.scenario['lifetime_seconds']:g}s after its bind"
        note += " (not in the ceiling's run)." if result.ceiling is not None else "."
    if result.rounds > 1:
        note += (
            f" {result.rounds} rounds, the contenders' order reversed in every other one "
            "(#N: the round)."
        )
    if result.ceiling is not None:
        ceiling = (
            f" Raw-bind ceiling (backlog mode): {result.ceiling.binding_pods_per_second:,.1f} "
            "pods/s."
        )
    return (
        f"API server and etcd: {flags}. Machine: {cpus} CPUs, load average before the run "
        f"{load}. The clock starts at the first create (stream and rate modes) or at the "
        "scheduler's start with every pod already created (backlog mode); CPU seconds cover "
        f"clock start → last bind.{ceiling}{note}"
    )


def table(result: BenchResult) -> Table:
    grid = Table(title=_title(result), title_justify="left")
    grid.add_column("")
    for run in result.runs:
        grid.add_column(run_label(run, result.rounds), justify="right")
    for label, cells in _rows(result):
        grid.add_row(label, *cells)
    grid.caption = _caption(result)
    grid.caption_justify = "left"
    return grid


def median_table(result: BenchResult) -> Table:
    grid = Table(title=_median_title(result), title_justify="left")
    for number, label in enumerate(MEDIAN_HEADER):
        grid.add_column(label, justify="left" if number < 2 else "right")
    for row in median_rows(result):
        grid.add_row(*row)
    return grid


def print_table(result: BenchResult, console: Console) -> None:
    console.print(table(result))
    if result.rounds > 1:
        console.print(median_table(result))
    for run in result.runs:
        for violation in run.feasibility.get("violations", []):
            console.print(f"[red]{run.scheduler}: {violation}[/red]")


def write_json(result: BenchResult, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / JSON_FILE
    path.write_text(json.dumps(result.to_json(), indent=1) + "\n")
    return path


def markdown(result: BenchResult) -> str:
    """The table as Markdown, with the command and the settings under it."""
    plain = re.compile(r"\[/?[a-z ]+\]")  # rich markup
    header = ["", *(run_label(r, result.rounds) for r in result.runs)]
    lines = [
        f"### {_title(result)}",
        "",
        f"`{result.command}` (started {result.started})",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for label, cells in _rows(result):
        lines.append("| " + " | ".join([label, *(plain.sub("", c) for c in cells)]) + " |")
    lines += ["", _caption(result), ""]
    if result.rounds > 1:
        lines += [f"#### {_median_title(result)}", ""]
        lines += ["| " + " | ".join(MEDIAN_HEADER) + " |", "|" + "---|" * len(MEDIAN_HEADER)]
        lines += ["| " + " | ".join(row) + " |" for row in median_rows(result)]
        lines.append("")
    return "\n".join(lines)


def write_markdown(result: BenchResult, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / MARKDOWN_FILE
    path.write_text(markdown(result))
    return path


def latency_vs_load(result: BenchResult) -> dict[str, list[tuple[float, dict[str, float]]]]:
    """For each scheduler, (offered pods/s, latency summary) of its open-loop runs; with
    several rounds at one rate, each quantile's median over them."""
    found: dict[str, dict[float, list[dict[str, float]]]] = {}
    for run in result.runs:
        if run.offered_rate:
            rates = found.setdefault(run.scheduler, {})
            rates.setdefault(run.offered_rate, []).append(run.latency)
    return {
        name: sorted((rate, _median_summary(summaries)) for rate, summaries in rates.items())
        for name, rates in found.items()
    }


def _median_summary(summaries: list[dict[str, float]]) -> dict[str, float]:
    if len(summaries) == 1:
        return summaries[0]
    keys = sorted({key for summary in summaries for key in summary})
    return {key: statistics.median(s[key] for s in summaries if key in s) for key in keys}


def write_latency_plots(result: BenchResult, folder: Path) -> list[Path]:
    """``latency-cdf.png`` always; ``latency-vs-load.png`` when runs were open-loop."""
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    figure, axes = plt.subplots(figsize=(9, 5.5))
    for run in result.runs:
        values = sorted(run.latencies)
        if values:
            shares = [(i + 1) / len(values) for i in range(len(values))]
            axes.step(values, shares, where="post", label=run_label(run, result.rounds))
    _label(axes, result, "latency created → bound (s)", "share of the run's pods", "lower right")
    written.append(_save(plt, figure, folder / CDF_FILE))
    lines = latency_vs_load(result)
    if lines:
        figure, axes = plt.subplots(figsize=(9, 5.5))
        for name, points in lines.items():
            rates = [rate for rate, _ in points]
            (line,) = axes.plot(
                rates, [s.get("p99", 0) for _, s in points], "o-", label=f"{name} p99"
            )
            axes.plot(
                rates,
                [s.get("p50", 0) for _, s in points],
                "o--",
                color=line.get_color(),
                label=f"{name} p50",
            )
        xlabel = "offered load (pods created per second)"
        _label(axes, result, xlabel, "latency created → bound (s)", "upper left")
        written.append(_save(plt, figure, folder / LOAD_FILE))
    return written


def latency_windows(run: RunResult, width: float = LATENCY_WINDOW) -> list[tuple[float, float]]:
    """(window start, the longest created -> bound latency of the pods bound in it)."""
    worst: dict[int, float] = {}
    for bound_at, latency in run.bind_latencies:
        window = int(bound_at // width)
        worst[window] = max(worst.get(window, 0.0), latency)
    return [(window * width, value) for window, value in sorted(worst.items())]


def write_autoscaling_plot(result: BenchResult, folder: Path) -> Path | None:
    """``autoscaling.png`` when runs were autoscaled: for each scheduler the load
    (per-pod CPU against the request), the autoscaler's desired and the Deployment's
    replicas, the pods pending, and the worst scheduling latency per window."""
    runs = [run for run in result.runs if run.autoscaling]
    if not runs:
        return None
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    figure, (replicas, pending, latency) = plt.subplots(3, 1, figsize=(9, 10), sharex=True)
    for run in runs:
        seconds = [sample["seconds"] for sample in run.autoscaling]
        (line,) = replicas.plot(
            seconds, [s["replicas"] or 0 for s in run.autoscaling], label=f"{run.scheduler}"
        )
        replicas.plot(seconds, [s["bound"] for s in run.autoscaling], ":", color=line.get_color())
        pending.plot(seconds, [s["pending"] for s in run.autoscaling], color=line.get_color())
        points = latency_windows(run)
        latency.plot(
            [t for t, _ in points], [v for _, v in points], "o-", color=line.get_color(),
            label=run.scheduler,
        )  # fmt: skip
    load_axes = replicas.twinx()
    first = runs[0].autoscaling
    load_axes.plot(
        [s["seconds"] for s in first],
        [s["load_millicores"] / 1000 for s in first],
        color="grey",
        linewidth=0.8,
        linestyle="--",
    )
    load_axes.set_ylabel("offered load (cores, dashed)")
    replicas.set_ylabel("replicas (dotted: bound)")
    replicas.set_title(_plot_title(result))
    replicas.legend(loc="upper left")
    pending.set_ylabel("pods pending")
    latency.set_ylabel(f"worst latency per {LATENCY_WINDOW:.0f} s (s)")
    latency.set_xlabel("seconds since the Deployment and its autoscaler were created")
    for axes in (replicas, pending, latency):
        axes.grid(alpha=0.3)
    return _save(plt, figure, folder / AUTOSCALING_FILE)


def _label(axes: Any, result: BenchResult, xlabel: str, ylabel: str, legend: str) -> None:
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(_plot_title(result))
    axes.grid(alpha=0.3)
    axes.legend(loc=legend)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def write_plot(result: BenchResult, folder: Path) -> Path:
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(9, 5.5))
    for run in result.runs:
        (line,) = axes.step(
            [0.0, *run.bind_times],
            range(len(run.bind_times) + 1),
            where="post",
            label=f"{run_label(run, result.rounds)}: {run.pods_per_second:,.0f} pods/s",
        )
        axes.step(
            [0.0, *run.create_times],
            range(len(run.create_times) + 1),
            where="post",
            linestyle="--",
            linewidth=0.8,
            color=line.get_color(),
            alpha=0.6,
        )
    scenario = result.scenario
    mode = result.runs[0].mode if result.runs else ""
    axes.set_title(
        f"{scenario['name']}: {scenario['pods']:,} pods onto {scenario['nodes']:,} kwok nodes "
        f"({mode} mode)"
    )
    axes.set_xlabel("seconds since the clock started (first create, or scheduler start)")
    axes.set_ylabel("pods bound" + (" (dashed: pods created)" if mode == "stream" else ""))
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    return _save(plt, figure, folder / PLOT_FILE)
