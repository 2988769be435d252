"""The benchmark run: one control plane, the same burst for each contender in turn.

1. Start a control plane of its own in ``dir`` (``kubesalvo.sched.cluster``), create the
   scenario's namespaces, priority classes and nodes (kwok keeps them Ready), and the
   pods of ``bound: true`` workloads, which stay for every run.
2. For each contender: start it and wait until it is ready; start sampling CPU and memory;
   open the measuring watch; create the burst concurrently, addressed to the contender,
   each create timestamped; wait until every pod is bound (or none was bound for
   ``settle`` seconds, or ``timeout``); stop the contender; check the placements
   (``feasibility``); delete the burst and wait until it is gone.
3. Stop the control plane (unless ``keep``), also when the run fails or is interrupted.
   With ``die_with_parent`` the control plane is also killed by the kernel when this
   process dies (even by SIGKILL): ``kubesalvo bench`` without ``--keep``, and tests,
   which keep it only until their own clean-up.

The contenders never run at the same time, so none takes CPU from another's run.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesalvo.core.snapshot import Snapshot
from kubesalvo.core.synthetic import Scenario
from kubesalvo.sched.bench import contenders, feasibility
from kubesalvo.sched.bench.podwatch import (
    BindWatch,
    Created,
    create_burst,
    delete_burst,
    wait_bound,
)
from kubesalvo.sched.bench.results import BenchResult, ProcessUsage, RunResult, latency_summary
from kubesalvo.sched.bench.usage import MACHINE, Sampler, machine
from kubesalvo.sched.bench.workload import RUN_LABEL, burst, generate, pod_key
from kubesalvo.sched.cluster import build, controlplane, nodes
from kubesalvo.sched.cluster.api import ApiClient, Object
from kubesalvo.sched.cluster.controlplane import ControlPlane

Say = Callable[[str], None]
# STREAM: the contender runs while the burst is created (the clock starts at the first
# create). BACKLOG: the whole burst is created first, then the contender is started (the
# clock starts with it), which measures it apart from how fast pods can be created.
STREAM = "stream"
BACKLOG = "backlog"
MODES = (STREAM, BACKLOG)
SCHEDULER = "scheduler"
# Processes whose CPU each run reports, besides the contender ("scheduler").
CONTROL_PLANE = ("kube-apiserver", "etcd", "kwok", "kube-controller-manager")
BENCH = "bench"
# Server-side settings that decide what a benchmark measures.
_REPORTED_FLAGS = (
    "--enable-priority-and-fairness",
    "--max-requests-inflight",
    "--max-mutating-requests-inflight",
    "--unsafe-no-fsync",
    "--node-lease-duration-seconds",
)


@dataclass
class Options:
    scenario: Scenario
    schedulers: tuple[str, ...]
    dir: Path
    qps: float = 5000.0
    burst: int = 5000
    create_concurrency: int = 64
    settle: float = 20.0
    timeout: float = 900.0
    keep: bool = False
    die_with_parent: bool = False
    mode: str = STREAM
    command: str = ""
    # Where each contender's log is copied (the control plane's folder is removed).
    logs: Path | None = None


def run(options: Options, say: Say) -> BenchResult:
    """Runs every contender against one control plane; see the module docstring."""
    scenario = options.scenario
    result = BenchResult(
        command=options.command,
        started=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        scenario={
            "name": scenario.name,
            "seed": scenario.seed,
            "nodes": scenario.fleet.nodes,
            "pods": scenario.pod_count,
            "workloads": [
                {"shape": w.shape, "pods": w.pods, "bound": w.bound} for w in scenario.workloads
            ],
        },
        control_plane={},
        machine=machine(),
    )
    bin_dir = build.bin_dir()
    if not build.is_complete(bin_dir):
        say("building the control-plane binaries")
        bin_dir = build.build()
    say(f"starting a control plane in {options.dir}")
    cp = asyncio.run(
        controlplane.start(
            options.dir, bin_dir, progress=say, die_with_parent=options.die_with_parent
        )
    )
    try:
        result.control_plane = _describe(cp)
        base = generate(scenario, options.schedulers[0])
        say(f"creating {len(base.nodes)} nodes and waiting until kwok makes them Ready")
        began = time.monotonic()
        cp.call(lambda client: _populate(client, base, options.timeout), nodes.NODE_CONCURRENCY)
        result.control_plane["populate_seconds"] = round(time.monotonic() - began, 2)
        for name in options.schedulers:
            result.runs.append(_run_one(cp, name, options, say))
    finally:
        if options.logs is not None and cp.log("kube-apiserver").exists():
            options.logs.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(cp.log("kube-apiserver"), options.logs / "kube-apiserver.log")
        if options.keep:
            say(f"control plane kept: kubesalvo cluster down --dir {cp.dir}")
        else:
            controlplane.stop(cp.dir)
    return result


def _describe(cp: ControlPlane) -> dict[str, Any]:
    argv = controlplane.apiserver_args(cp) + controlplane.etcd_args(cp)
    argv += controlplane.kwok_args(cp)
    flags = [arg for arg in argv if arg.split("=", 1)[0] in _REPORTED_FLAGS]
    kwok: dict[str, Any] = dict(controlplane.kwok_config(cp)["options"])
    return {
        "binaries": cp.bin_dir.name,
        "flags": flags,
        "kwok": {k: v for k, v in kwok.items() if k.endswith("Parallelism")},
        "server": cp.server,
    }


async def _populate(client: ApiClient, cluster: Snapshot, timeout: float) -> None:
    await client.create_all(cluster.namespaces, exist_ok=True)
    await client.create_all(cluster.priorityclasses, exist_ok=True)
    await nodes.add_nodes(client, cluster.nodes, timeout)
    await client.create_all(cluster.bound_pods(), exist_ok=True)


def _run_one(cp: ControlPlane, name: str, options: Options, say: Say) -> RunResult:
    cluster = generate(options.scenario, name)
    run_id = f"{name}-{secrets.token_hex(3)}"
    selector = f"{RUN_LABEL}={run_id}"
    pods = burst(cluster, run_id)
    sampler = Sampler({**{c: cp.pids[c] for c in CONTROL_PLANE}, BENCH: os.getpid()})
    launched: list[contenders.Contender] = []

    def launch() -> None:
        say(f"{name}: starting")
        contender = contenders.start(cp, name, options.qps, options.burst)
        launched.append(contender)
        sampler.add(SCHEDULER, contender.pid, contender.began)
        say(f"{name}: ready after {contender.startup_seconds:.1f}s")

    sampler.start()
    try:
        if options.mode == STREAM:
            launch()
        say(f"{name}: creating {len(pods)} pods")
        measured = cp.call(
            lambda client: _measure(
                client, pods, selector, options, None if options.mode == STREAM else launch, say
            ),
            options.create_concurrency + 4,
        )
    finally:
        sampler.stop()
        for contender in launched:
            contender.stop()
            if options.logs is not None:
                options.logs.mkdir(parents=True, exist_ok=True)
                saved = options.logs / contender.log.name
                shutil.copyfile(contender.log, saved)
                contender.log = saved
    (contender,) = launched
    bound, clock = measured.bound, measured.clock
    end = max((t for t, _ in bound.values()), default=clock)
    say(f"{name}: {measured.outcome}: {len(bound)}/{len(pods)} bound in {end - clock:.1f}s")
    usage = {
        process: ProcessUsage(**vars(sampler.usage(process, clock, end)))
        for process in [SCHEDULER, *CONTROL_PLANE, BENCH, MACHINE]
    }
    say(f"{name}: checking the placements")
    report = cp.call(lambda client: _check(client, {pod_key(p) for p in pods}))
    checked: dict[str, Any] = {"checked": True, "ok": report.ok, **vars(report)}
    if name == contenders.RAW_BIND:
        # It ignores every constraint: only the server's counts are of interest.
        checked = {
            "checked": False,
            "why": "binds without scheduling",
            "run_pods_found": report.run_pods_found,
            "run_pods_unbound": report.run_pods_unbound,
        }
    say(f"{name}: deleting the pods")
    keys = [pod_key(p) for p in pods]
    delete_seconds = cp.call(
        lambda client: delete_burst(
            client, keys, selector, options.create_concurrency, options.timeout
        ),
        options.create_concurrency + 4,
    )
    return _result(name, pods, measured, usage, contender, checked, delete_seconds, options.mode)


@dataclass
class Measured:
    created: Created
    bound: dict[str, tuple[float, str]]  # key -> (time.monotonic() seen bound, node)
    outcome: str
    clock: float  # when the run's clock started (time.monotonic())


async def _measure(
    client: ApiClient,
    pods: list[Object],
    selector: str,
    options: Options,
    launch: Callable[[], None] | None,
    say: Say,
) -> Measured:
    """Creates the burst and waits for its binds. With ``launch`` (backlog mode) every pod
    is created first and the clock starts when ``launch`` starts the contender."""
    watch = BindWatch(client, selector)
    watching = asyncio.create_task(watch.run())
    created = Created()
    try:
        await watch.listed.wait()
        clock = time.monotonic()
        creation = asyncio.create_task(
            create_burst(client, pods, options.create_concurrency, created)
        )
        try:
            if launch is not None:
                await creation
                say(f"{len(pods)} pods created in {created.last - created.first:.1f}s")
                clock = time.monotonic()
                # The contender's start waits on its own event loop, so it runs in a thread.
                await asyncio.to_thread(launch)
            outcome = await wait_bound(
                watch, len(pods), creation, watching, options.settle, options.timeout
            )
        finally:
            creation.cancel()  # only still running after a timeout or a failed start
            await asyncio.gather(creation, return_exceptions=True)
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
    reconnects = ", ".join(f"{n} {why}" for why, n in watch.rewatches.items()) or "none"
    say(f"measuring watch: reconnects {reconnects}; {watch.relists} relists after 410 Gone")
    return Measured(created, dict(watch.bound), outcome, clock)


async def _list_all(client: ApiClient, path: str) -> list[Object]:
    items: list[Object] = []
    params = {"limit": "5000"}
    while True:
        page = await client.request("GET", path, params=params)
        items.extend(page["items"])
        token = page["metadata"].get("continue")
        if not token:
            return items
        params = {"limit": "5000", "continue": token}


async def _check(client: ApiClient, run_keys: set[str]) -> feasibility.Feasibility:
    node_list = await _list_all(client, "/api/v1/nodes")
    pod_list = await _list_all(client, "/api/v1/pods")
    return feasibility.check(node_list, pod_list, run_keys)


def _result(
    name: str,
    pods: list[Object],
    measured: Measured,
    usage: dict[str, ProcessUsage],
    contender: contenders.Contender,
    checked: dict[str, Any],
    delete_seconds: float,
    mode: str,
) -> RunResult:
    start, created = measured.clock, measured.created
    # Every figure below derives from these rounded times, so that they agree exactly.
    bind_times = sorted(round(t - start, 4) for t, _ in measured.bound.values())
    # A pod waits from its creation or, in backlog mode, from the contender's start.
    latencies = [
        max(0.0, t - max(start, created.answered[key]))
        for key, (t, _) in measured.bound.items()
        if key in created.answered
    ]
    duration = bind_times[-1] if bind_times else 0.0
    binding_span = bind_times[-1] - bind_times[0] if len(bind_times) > 1 else 0.0
    return RunResult(
        scheduler=name,
        mode=mode,
        outcome=measured.outcome,
        pods=len(pods),
        bound=len(measured.bound),
        created_seconds=round(created.last - created.first, 3),
        duration_seconds=duration,
        pods_per_second=round(len(measured.bound) / duration, 1) if duration else 0.0,
        binding_pods_per_second=(
            round(len(measured.bound) / binding_span, 1) if binding_span else 0.0
        ),
        time_to_first_bind=bind_times[0] if bind_times else 0.0,
        latency=latency_summary(latencies),
        usage=usage,
        startup_seconds=round(contender.startup_seconds, 2),
        delete_seconds=round(delete_seconds, 2),
        feasibility=checked,
        settings=contender.settings,
        log=str(contender.log),
        create_times=sorted(round(t - start, 4) for t in created.answered.values())
        if mode == STREAM
        else [],
        bind_times=bind_times,
    )
