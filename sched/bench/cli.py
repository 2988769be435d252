"""``kubesalvo bench``: the same burst for each scheduler, on one real control plane.

    kubesalvo bench --nodes 5000 --pods 10000 --workload replicasets \\
        --schedulers kubesalvo,kube-scheduler,raw-bind --out bench-results/

prints a table, and writes ``results.json``, ``results.md`` and the plots (and each
contender's log) to ``--out``. ``--json`` prints the JSON document instead of the table.
``--kubernetes VERSION`` runs everything on another shipped release's control plane;
``--rate R --duration S`` creates pods open-loop at R pods/s instead of a burst;
``--rates 25%,50%,90%`` sweeps shares of raw-bind's measured ceiling in one invocation;
``--repeat N`` runs it all N times, contenders in alternating order, and reports medians.

SIGINT or SIGTERM stops the run: the contender and (unless ``--keep``) the control plane
are stopped, and the command exits with 128 + the signal's number. Without ``--keep`` the
control plane is also tied to this process, so that even a SIGKILL leaves nothing running.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from kubesalvo.core.synthetic import STATEFUL, ScenarioError
from kubesalvo.sched.bench import contenders, harness, openloop, report
from kubesalvo.sched.bench.workload import (
    HPA,
    PODS,
    WorkloadError,
    load_scenario,
    load_settings,
)
from kubesalvo.sched.cluster import build
from kubesalvo.sched.cluster.controlplane import StartError

console = Console(stderr=True, highlight=False, soft_wrap=True)
# Checked by the command line before anything starts (the plot is written at the end).
OPTIONAL_DEPENDENCIES = {"matplotlib": "bench"}


def parse_cpus(text: str) -> frozenset[int]:
    """ "1", "0,2", "2-3" -> CPU numbers; raises ValueError saying what is accepted."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            first, _, last = part.strip().partition("-")
            low, high = int(first), int(last or first)
            if low < 0 or high < low:
                raise ValueError
            cpus.update(range(low, high + 1))
    except ValueError:
        raise ValueError(
            f"--scheduler-cpus {text!r}: give CPU numbers and ranges, e.g. 1 or 0,2 or 2-3"
        ) from None
    return frozenset(cpus)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workload",
        default="replicasets",
        help="a scenario file (or the name of one in bench/workloads/ or bench/e2e/) or a "
        "workload shape: replicasets, distinct, mixed, gangs (default replicasets)",
    )
    parser.add_argument("--nodes", type=int, help="kwok nodes (default: the scenario's; 5000)")
    parser.add_argument("--pods", type=int, help="pods in the burst (default: the scenario's)")
    parser.add_argument(
        "--schedulers",
        default=f"{contenders.KUBESALVO},{contenders.KUBE_SCHEDULER}",
        help=f"comma-separated, run in this order; from {', '.join(contenders.CONTENDERS)} "
        "(raw-bind binds without scheduling, through kubesalvo's client and binder: the "
        "ceiling; raw-bind-events also writes the Scheduled event per pod: the fair ceiling)",
    )
    parser.add_argument(
        "--mode",
        choices=harness.MODES,
        default=harness.STREAM,
        help="stream: create the pods while the scheduler runs (default); backlog: create "
        "them all first, then start the scheduler and time it from its start",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="a control plane of its own for each run (of each contender, at each rate and "
        "in each round): none meets what an earlier one left (a second contender on a "
        "shared one ran 5-8%% slower, whichever it was), and no run's pods are deleted one "
        "by one afterwards",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run every contender (at every rate) N times, in rounds whose contender order "
        "alternates (A B, B A, ...); a sweep's ceiling is measured once; the report adds "
        "each contender's median p50, p99 and scheduler CPU per pod over the rounds and "
        "their ratio to the first contender's (default 1)",
    )
    parser.add_argument(
        "--scheduler-cpus",
        metavar="LIST",
        help="CPUs for the scheduler's own processes, e.g. 1 or 2-3; the control plane and "
        "the bench get the others (by default all share every CPU, and what a scheduler "
        "spends is taken from the API server)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench-results"), help="results folder")
    parser.add_argument("--json", action="store_true", help="print the JSON results to stdout")
    parser.add_argument(
        "--dir",
        type=Path,
        help="control-plane folder (default: OUT/control-plane, removed afterwards)",
    )
    parser.add_argument("--keep", action="store_true", help="leave the control plane running")
    parser.add_argument(
        "--qps", type=float, default=5000, help="client QPS of every scheduler (default 5000)"
    )
    parser.add_argument(
        "--burst", type=int, default=5000, help="client burst of every scheduler (default 5000)"
    )
    parser.add_argument(
        "--create-concurrency",
        type=int,
        default=64,
        help="pod creations in flight (default 64)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=20.0,
        help="end a run when no pod was bound for this many seconds after creation (default 20)",
    )
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="longest run in seconds (default 900)"
    )
    parser.add_argument(
        "--kubernetes",
        metavar="VERSION",
        help="the Kubernetes release of the control plane and of kube-scheduler "
        f"(default {next(iter(build.kubernetes_modules()))}; see `kubesalvo cluster build`)",
    )
    pacing = parser.add_mutually_exclusive_group()
    pacing.add_argument(
        "--rate",
        help="create pods open-loop at this many pods/s for --duration (instead of a burst); "
        "latency created → bound at a steady load",
    )
    pacing.add_argument(
        "--rates",
        help="a sweep: comma-separated percentages of raw-bind's ceiling (measured first in "
        "backlog mode), e.g. 25%%,50%%,90%%; each scheduler runs open-loop at each",
    )
    parser.add_argument(
        "--duration",
        type=float,
        help="seconds of creation at --rate/--rates (default: the scenario's, else 60)",
    )


def _schedulers(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in contenders.CONTENDERS]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(
            f"--schedulers {text!r}: name each of {', '.join(contenders.CONTENDERS)} at most once"
        )
    return names


def main(args: argparse.Namespace) -> int:
    try:
        schedulers = _schedulers(args.schedulers)
        scenario = load_scenario(args.workload).resized(args.nodes, args.pods)
        settings = load_settings(args.workload)
        rate = openloop.parse_rate(args.rate) if args.rate is not None else settings.rate
        rates = tuple(openloop.parse_rates(args.rates)) if args.rates is not None else ()
        if rates:
            rate = None
        duration = args.duration if args.duration is not None else settings.duration or 60.0
        if not duration > 0:
            raise ValueError(f"--duration {duration}: give a positive number of seconds")
        if (rate or rates) and args.mode == harness.BACKLOG:
            raise ValueError("--rate/--rates create pods open-loop: --mode backlog does not apply")
        scheduler_cpus = None
        if args.scheduler_cpus is not None:
            scheduler_cpus = parse_cpus(args.scheduler_cpus)
            harness.split_cpus(scheduler_cpus)
        if args.fresh and settings.create == HPA:
            raise ValueError("--fresh applies to stream, backlog, --rate and --rates runs")
        if args.repeat < 1:
            raise ValueError(f"--repeat {args.repeat}: give a number of rounds, 1 or more")
        if args.repeat > 1 and settings.create == HPA:
            raise ValueError("--repeat applies to stream, backlog, --rate and --rates runs")
        if settings.create != PODS and any(w.shape == STATEFUL for w in scenario.workloads):
            raise ValueError(
                f"{args.workload}: a stateful workload is created as bare pods and claims "
                f"(create: {PODS}), not {settings.create}"
            )
        if (rate or rates) and settings.create != PODS:
            raise ValueError(
                f"--rate/--rates create bare pods open-loop; {args.workload} creates "
                f"{settings.create}"
            )
        build.shipped_versions(kubernetes=args.kubernetes)
    except (ValueError, WorkloadError, ScenarioError, build.BuildError) as error:
        console.print(f"[red]error:[/red] {error}")
        return 2
    out = args.out.expanduser().resolve()
    options = harness.Options(
        scenario=scenario,
        schedulers=schedulers,
        dir=(args.dir or out / "control-plane").expanduser().resolve(),
        qps=args.qps,
        burst=args.burst,
        create_concurrency=args.create_concurrency,
        settle=args.settle,
        timeout=args.timeout,
        keep=args.keep,
        die_with_parent=not args.keep,
        mode=args.mode,
        fresh=args.fresh,
        scheduler_cpus=scheduler_cpus,
        command=shlex.join(["kubesalvo", *sys.argv[1:]]),
        logs=out / "logs",
        kubernetes=args.kubernetes,
        rate=rate,
        rates=rates,
        duration=duration,
        create=settings.create,
        lifetime=settings.lifetime,
        note=settings.note,
        devices=settings.devices,
        hpa=(
            dataclasses.replace(settings.hpa, duration=args.duration)
            if settings.hpa is not None and args.duration is not None
            else settings.hpa
        ),
        repeat=args.repeat,
    )
    began = time.monotonic()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("bound, {task.fields[created]:,} created"),
        TimeElapsedColumn(),
    )
    display = Progress(*columns, console=console, transient=False)
    bars: dict[str, TaskID] = {}

    def say(message: str) -> None:
        display.console.print(f"[dim]{time.monotonic() - began:7.1f}s[/dim] {message}")

    def progress(name: str, bound: int, created: int, total: int) -> None:
        if name not in bars or display.tasks[bars[name]].total != total:
            bars[name] = display.add_task(name, total=total, created=0)
        display.update(bars[name], completed=bound, created=created)

    options.progress = progress
    with _interrupted_by_signals() as caught, display:
        try:
            result = harness.run(options, say)
        except (build.BuildError, StartError, TimeoutError) as error:
            console.print(f"[red]error:[/red] {error}")
            return 1
        except KeyboardInterrupt:
            signum = caught[-1] if caught else signal.SIGINT
            left = f"control plane kept in {options.dir}" if args.keep else "control plane stopped"
            console.print(f"{signal.Signals(signum).name}: run stopped, contenders and {left}")
            return 128 + signum
    saved = report.write_json(result, out)
    report.write_markdown(result, out)
    plot = report.write_plot(result, out)
    report.write_latency_plots(result, out)
    report.write_autoscaling_plot(result, out)
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    else:
        # Wide enough for three contenders side by side, also when piped to a file; the
        # medians' table of repeated runs lists every round's figures in one cell.
        width = max(console.width, 120 if result.rounds == 1 else 200)
        report.print_table(result, Console(highlight=False, width=width))
    say(f"wrote {saved} and {plot}")
    complete = all(run.outcome == "all bound" for run in result.runs)
    placed_right = all(run.feasibility.get("ok", True) for run in result.runs)
    return 0 if complete and placed_right else 3


@contextmanager
def _interrupted_by_signals() -> Iterator[list[int]]:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread while the body runs, so
    that the harness's clean-up (``finally``) runs for both; yields the signals caught."""
    caught: list[int] = []

    def interrupt(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield caught
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
