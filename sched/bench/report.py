"""A benchmark's results for people and programs: a rich table, a JSON file, a plot.

The table puts the contenders side by side (throughput, latency, CPU seconds of the
scheduler and of the control plane, memory, the placement check) and says under it which
server settings were used and how busy the machine was. ``results.json`` holds everything,
with every pod's bind time; ``bound-over-time.png`` plots bound pods against time since the
first creation, one line per contender, with its creations dashed.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kubesalvo.sched.bench.results import BenchResult, RunResult
from kubesalvo.sched.bench.usage import MACHINE

JSON_FILE = "results.json"
PLOT_FILE = "bound-over-time.png"


def _mib(size: int) -> str:
    return f"{size / 2**20:.0f} MiB"


def _check(run: RunResult) -> str:
    checked = run.feasibility
    if not checked.get("checked"):
        return "not checked"
    return "ok" if checked["ok"] else f"[red]{checked['violation_count']} violations[/red]"


def table(result: BenchResult) -> Table:
    scenario = result.scenario
    mode = result.runs[0].mode if result.runs else ""
    title = (
        f"{scenario['name']}: {scenario['pods']:,} pods onto {scenario['nodes']:,} kwok nodes, "
        f"{mode} mode ({result.control_plane.get('binaries', '')})"
    )
    grid = Table(title=title, title_justify="left")
    grid.add_column("")
    for run in result.runs:
        grid.add_column(run.scheduler, justify="right")
    rows: list[tuple[str, list[str]]] = [
        ("bound", [f"{r.bound:,}/{r.pods:,} ({r.outcome})" for r in result.runs]),
        ("pods/s (clock start → last bind)", [f"{r.pods_per_second:,.0f}" for r in result.runs]),
        ("pods/s (first → last bind)", [f"{r.binding_pods_per_second:,.0f}" for r in result.runs]),
        ("creating took", [f"{r.created_seconds:.2f}s" for r in result.runs]),
        ("last bind at", [f"{r.duration_seconds:.2f}s" for r in result.runs]),
        ("time to first bind", [f"{r.time_to_first_bind * 1000:.0f} ms" for r in result.runs]),
    ]
    for q in ("p50", "p99", "max"):
        rows.append(
            (f"latency {q} (created → bound)", [f"{r.latency.get(q, 0):.3f}s" for r in result.runs])
        )
    for process in ("scheduler", "kube-apiserver", "etcd", "kwok", "kube-controller-manager"):
        cells = [f"{r.usage[process].cpu_seconds:.1f}" for r in result.runs]
        rows.append((f"CPU s: {process}", cells))
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
        ("scheduler start (informers synced)", [f"{r.startup_seconds:.1f}s" for r in result.runs])
    )
    rows.append(("placements", [_check(r) for r in result.runs]))
    for label, cells in rows:
        grid.add_row(label, *cells)
    cpus = result.machine.get("cpus")
    load = result.machine.get("load_average")
    flags = " ".join(result.control_plane.get("flags", []))
    grid.caption = (
        f"API server and etcd: {flags}. Machine: {cpus} CPUs, load average before the run "
        f"{load}. The clock starts at the first create (stream mode) or at the scheduler's "
        "start with every pod already created (backlog mode); CPU seconds cover clock start "
        "→ last bind."
    )
    grid.caption_justify = "left"
    return grid


def print_table(result: BenchResult, console: Console) -> None:
    console.print(table(result))
    for run in result.runs:
        for violation in run.feasibility.get("violations", []):
            console.print(f"[red]{run.scheduler}: {violation}[/red]")


def write_json(result: BenchResult, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / JSON_FILE
    path.write_text(json.dumps(result.to_json(), indent=1) + "\n")
    return path


def write_plot(result: BenchResult, folder: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(9, 5.5))
    for run in result.runs:
        (line,) = axes.step(
            [0.0, *run.bind_times],
            range(len(run.bind_times) + 1),
            where="post",
            label=f"{run.scheduler}: {run.pods_per_second:,.0f} pods/s",
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
    path = folder / PLOT_FILE
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
