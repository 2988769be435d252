"""The benchmark run: one control plane, the same burst for each contender in turn.

1. Start a control plane of its own in ``dir`` (``kubesalvo.sched.cluster``), create the
   scenario's namespaces, priority classes and nodes (kwok keeps them Ready), and the
   pods of ``bound: true`` workloads, which stay for every run.
2. For each contender: start it and wait until it is ready; start sampling CPU and memory;
   open the measuring watch; create the burst concurrently, addressed to the contender,
   each create timestamped; wait until every pod is bound (or none was bound for
   ``settle`` seconds, or ``timeout``); stop the contender; check the placements
   (``feasibility``); delete the burst and wait until it is gone (unless the control
   plane is stopped right after: the last run without ``keep``, or any but the last
   with ``fresh``, where the next run gets a control plane of its own).
3. Stop the control plane (unless ``keep``), also when the run fails or is interrupted.
   With ``die_with_parent`` the control plane is also killed by the kernel when this
   process dies (even by SIGKILL): ``kubesalvo bench`` without ``--keep``, and tests,
   which keep it only until their own clean-up.

The contenders never run at the same time, so none takes CPU from another's run.

With ``rate`` each run creates ``rate x duration`` pods open-loop at that rate
(``openloop``) instead of a burst; with ``rates`` (shares of the raw-bind ceiling) the
ceiling is measured first (raw-bind, backlog mode, the scenario's burst) and every
contender then runs at each share of it in turn: latency against offered load. In a
churn scenario (``lifetime``) the ceiling run deletes nothing: it is binding alone.

With ``repeat`` all of step 2 runs that many times, in rounds whose contender order
alternates (``repeat.order``); a sweep's ceiling is measured once, before the first round.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import os
import secrets
import shutil
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesalvo.core.snapshot import Snapshot
from kubesalvo.core.synthetic import Scenario
from kubesalvo.sched.bench import (
    apitraffic,
    contenders,
    feasibility,
    hpa,
    openloop,
    readback,
    repeat,
    rollout,
    stages,
)
from kubesalvo.sched.bench import devices as bench_devices
from kubesalvo.sched.bench import volumes as bench_volumes
from kubesalvo.sched.bench.device_settings import DeviceSettings
from kubesalvo.sched.bench.podwatch import (
    BindWatch,
    Created,
    create_burst,
    delete_burst,
    wait_bound,
)
from kubesalvo.sched.bench.results import BenchResult, ProcessUsage, RunResult, latency_summary
from kubesalvo.sched.bench.usage import MACHINE, Sampler, machine
from kubesalvo.sched.bench.workload import (
    HPA,
    PODS,
    RUN_LABEL,
    SCALE_UP,
    burst,
    generate,
    with_pending,
)
from kubesalvo.sched.cluster import build, controlplane, metrics_server, nodes
from kubesalvo.sched.cluster.api import ApiClient, ApiError, Object
from kubesalvo.sched.cluster.controlplane import ControlPlane

Say = Callable[[str], None]
# STREAM: the contender runs while the burst is created (the clock starts at the first
# create). BACKLOG: the whole burst is created first, then the contender is started (the
# clock starts with it), which measures it apart from how fast pods can be created.
STREAM = "stream"
BACKLOG = "backlog"
MODES = (STREAM, BACKLOG)
# Runs paced by ``Options.rate`` or ``Options.rates`` report this mode.
RATE = "rate"
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
    # A control plane of its own for each contender (stream, backlog and single-rate runs).
    fresh: bool = False
    # CPUs of the scheduler's own processes; everything else of the run (the control plane,
    # the bench) gets the others. None: all share every CPU.
    scheduler_cpus: frozenset[int] | None = None
    command: str = ""
    # Where each contender's log is copied (the control plane's folder is removed).
    logs: Path | None = None
    # The Kubernetes release of the control plane and kube-scheduler (None: the default).
    kubernetes: str | None = None
    # Open loop: pods per second for ``duration`` seconds, or shares of the raw-bind ceiling.
    rate: float | None = None
    rates: tuple[float, ...] = ()
    duration: float = 60.0
    # Told (run, bound, created, total) twice a second while a run creates and waits.
    progress: Callable[[str, int, int, int], None] | None = None
    # How the burst is created (workload.CREATE_MODES) and, for churn, how long each pod
    # lives once bound; the scenario's note (e.g. which profile it runs with).
    create: str = PODS
    lifetime: float | None = None
    note: str = ""
    # The ``hpa`` scenario's Deployment, autoscaler and load (``create: hpa``).
    hpa: hpa.HpaSettings | None = None
    # GPUs published per node and claimed per pod through DRA (``bench.devices``).
    devices: DeviceSettings | None = None
    # Rounds of every run (``repeat``: each round reverses the last one's contender order).
    repeat: int = 1


def run(options: Options, say: Say) -> BenchResult:
    """Runs every contender against one control plane; see the module docstring."""
    others = None if options.scheduler_cpus is None else split_cpus(options.scheduler_cpus)[1]
    # This thread's CPUs pass to the processes and threads it starts from here on.
    with _on_cpus(others):
        return _run(options, say)


def split_cpus(scheduler: frozenset[int]) -> tuple[frozenset[int], frozenset[int]]:
    """(the scheduler's CPUs, the others') out of the CPUs this process may use; raises
    ValueError when the scheduler's are not among them or leave none over."""
    usable = frozenset(os.sched_getaffinity(0))
    if not scheduler or not scheduler <= usable:
        raise ValueError(
            f"--scheduler-cpus {_cpu_list(scheduler)}: pick among the CPUs this process may "
            f"use ({_cpu_list(usable)})"
        )
    if not usable - scheduler:
        raise ValueError(
            f"--scheduler-cpus {_cpu_list(scheduler)} leaves no CPU for the control plane "
            f"(usable: {_cpu_list(usable)})"
        )
    return scheduler, usable - scheduler


def _cpu_list(cpus: frozenset[int]) -> str:
    return ",".join(str(cpu) for cpu in sorted(cpus)) or "none"


@contextlib.contextmanager
def _on_cpus(cpus: frozenset[int] | None) -> Iterator[None]:
    """Runs the block on ``cpus`` (the processes it starts keep them), then as before."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def _run(options: Options, say: Say) -> BenchResult:
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
            "create": options.create,
            "lifetime_seconds": options.lifetime,
            "note": options.note,
        },
        control_plane={},
        machine=machine(),
        schedulers=list(options.schedulers),
        rounds=options.repeat,
    )
    versions = build.shipped_versions(kubernetes=options.kubernetes)
    bin_dir = build.bin_dir(versions)
    if not build.is_complete(bin_dir):
        say(f"building the control-plane binaries of Kubernetes {versions.kubernetes}")
        bin_dir = build.build(kubernetes=options.kubernetes)
    say(f"starting a control plane in {options.dir}")
    cp = _start(options, bin_dir, say)
    try:
        result.control_plane = _describe(cp)
        base = generate(scenario, options.schedulers[0])
        result.control_plane["populate_seconds"] = _add_nodes(cp, base, options, say)
        steps: list[tuple[float | None, float | None]] = [(options.rate, None)]
        mode = RATE if options.rate else options.mode
        if options.rates:
            say(f"{contenders.RAW_BIND}: measuring the ceiling (backlog mode)")
            # Binding alone: no pod of the ceiling run is deleted after a lifetime.
            binding_only = dataclasses.replace(options, lifetime=None)
            ceiling = _run_one(
                cp, contenders.RAW_BIND, binding_only, say, BACKLOG, discard=options.fresh
            )
            ceiling.round_number = 0
            result.ceiling = ceiling
            top = ceiling.binding_pods_per_second
            if not top:
                raise RuntimeError(f"{contenders.RAW_BIND} bound nothing: no ceiling to scale")
            steps = [(round(share * top, 2), share) for share in options.rates]
            mode = RATE
        if options.create == HPA:
            binary = metrics_server.build()
            say(
                f"starting metrics-server {metrics_server.version()} (ready after its first scrape)"
            )
            asyncio.run(
                controlplane.start_metrics_server(
                    cp, binary, die_with_parent=options.die_with_parent
                )
            )
            for name in options.schedulers:
                result.runs.append(_run_hpa(cp, name, options, say))
            return result
        planned = [
            (number, name, rate, share)
            for number in range(1, options.repeat + 1)
            for rate, share in steps
            for name in repeat.order(options.schedulers, number)
        ]
        for index, (number, name, rate, share) in enumerate(planned):
            if options.fresh and (index > 0 or result.ceiling is not None):
                cp = _fresh_control_plane(cp, bin_dir, base, options, say, _plane_label(result))
            if rate:
                say(f"{name}: round {number} of {options.repeat}, {rate:,.1f} pods/s")
            last = index == len(planned) - 1
            # Pods on a control plane that is stopped right after the run are not deleted
            # one by one (minutes at 30,000 pods): nothing measured later meets them.
            discard = options.fresh if not last else not options.keep
            run = _run_one(cp, name, options, say, mode, rate, share, discard=discard)
            run.round_number = number
            result.runs.append(run)
    finally:
        _keep_apiserver_log(cp, options, "kube-apiserver.log")
        if options.keep:
            say(f"control plane kept: kubesalvo cluster down --dir {cp.dir}")
        else:
            controlplane.stop(cp.dir)
    return result


def _start(options: Options, bin_dir: Path, say: Say) -> ControlPlane:
    return asyncio.run(
        controlplane.start(
            options.dir, bin_dir, progress=say, die_with_parent=options.die_with_parent
        )
    )


def _plane_label(result: BenchResult) -> str:
    """The last run's name for the log of the control plane it ran on: its contender,
    and with several rates or rounds its rate and round."""
    last = result.runs[-1] if result.runs else result.ceiling
    if last is None:
        return "none"
    if last is result.ceiling:
        return "ceiling"
    label = last.scheduler
    if last.offered_rate and result.ceiling is not None:
        label += f"-{last.offered_rate:g}"
    if result.rounds > 1:
        label += f"-round{last.round_number}"
    return label


def _fresh_control_plane(
    cp: ControlPlane, bin_dir: Path, base: Snapshot, options: Options, say: Say, last: str
) -> ControlPlane:
    """Stops ``cp`` (keeping its API server's log as kube-apiserver-<last run>.log) and
    starts another in its folder with the same nodes, for the next run."""
    _keep_apiserver_log(cp, options, f"kube-apiserver-{last}.log")
    controlplane.stop(cp.dir)
    say(f"starting a fresh control plane in {options.dir}")
    cp = _start(options, bin_dir, say)
    _add_nodes(cp, base, options, say)
    return cp


def _add_nodes(cp: ControlPlane, base: Snapshot, options: Options, say: Say) -> float:
    """Creates the scenario's nodes and waits until kwok makes them Ready; the seconds."""
    say(f"creating {len(base.nodes)} nodes and waiting until kwok makes them Ready")
    began = time.monotonic()
    cp.call(lambda client: _populate(client, base, options.timeout), nodes.NODE_CONCURRENCY)
    return round(time.monotonic() - began, 2)


def _keep_apiserver_log(cp: ControlPlane, options: Options, name: str) -> None:
    """Copies the API server's log into ``options.logs`` (if given) as ``name``."""
    if options.logs is not None and cp.log("kube-apiserver").exists():
        options.logs.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cp.log("kube-apiserver"), options.logs / name)


def _describe(cp: ControlPlane) -> dict[str, Any]:
    argv = controlplane.apiserver_args(cp) + controlplane.etcd_args(cp)
    argv += controlplane.kwok_args(cp)
    flags = [arg for arg in argv if arg.split("=", 1)[0] in _REPORTED_FLAGS]
    options = controlplane.kwok_config(cp)["options"]
    assert isinstance(options, dict)
    kwok: dict[str, Any] = dict(options)
    versions = cp.bin_dir.name
    return {
        "binaries": versions,
        "kubernetes": cp.kubernetes,
        "versions": dict(part.split("-", 1) for part in versions.split("_")),
        "flags": flags,
        "kwok": {k: v for k, v in kwok.items() if k.endswith("Parallelism")},
        "server": cp.server,
    }


async def _populate(client: ApiClient, cluster: Snapshot, timeout: float) -> None:
    await client.create_all(cluster.namespaces, exist_ok=True)
    await client.create_all(cluster.priorityclasses, exist_ok=True)
    await nodes.add_nodes(client, cluster.nodes, timeout)
    await client.create_all(cluster.bound_pods(), exist_ok=True)


def _run_one(
    cp: ControlPlane,
    name: str,
    options: Options,
    say: Say,
    mode: str,
    rate: float | None = None,
    share: float | None = None,
    discard: bool = False,
) -> RunResult:
    """One contender's run; with ``discard`` its pods are left to a control plane that is
    stopped right after it."""
    scenario = options.scenario
    if rate:
        scenario = with_pending(scenario, max(2, round(rate * options.duration)))
    run_id = f"{name}-{secrets.token_hex(3)}"
    selector = f"{RUN_LABEL}={run_id}"
    through = options.create
    plan: rollout.Rollout | None = None
    storage: bench_volumes.RunStorage | None = None
    devices: bench_devices.RunDevices | None = None
    if through == PODS:
        cluster = generate(scenario, name)
        pods = burst(cluster, run_id)
        total = len(pods)
        storage = bench_volumes.for_run(cluster, pods, run_id)
        if storage is not None:  # before the clock, as an administrator's volumes are
            made = storage
            say(f"{name}: creating {len(made.volumes)} volumes and {len(made.claims)} claims")
            seconds = cp.call(lambda client: bench_volumes.create(client, made, options.timeout))
            say(f"{name}: every volume Available after {seconds:.1f}s")
        if options.devices is not None:
            claimed = bench_devices.for_run(cluster, pods, run_id, options.devices)
            devices = claimed
            say(f"{name}: publishing {len(claimed.slices)} slices of GPUs")
            cp.call(lambda client: bench_devices.create(client, claimed))
    else:
        plan = rollout.plan(scenario, name, run_id)
        pods, total = plan.pods, plan.total
        if through == SCALE_UP:
            # Created at 0 replicas before the clock, as an autoscaler finds them.
            at_zero = rollout.at_zero(plan)
            cp.call(lambda client: client.create_all(at_zero))
    creating = _creator(options, plan, through, pods, rate)
    sampler = Sampler({**{c: cp.pids[c] for c in CONTROL_PLANE}, BENCH: os.getpid()})
    launched: list[contenders.Contender] = []
    # The contender dies with the thread that started it (die_with_parent), so in backlog
    # mode, where the measurement starts it, it is started on a thread that lives until
    # it has been stopped (and its /metrics saved), not on the measurement's own.
    starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="contender")

    def launch() -> None:
        say(f"{name}: starting")
        with _on_cpus(options.scheduler_cpus):
            contender = contenders.start(
                cp, name, options.qps, options.burst, start_timeout(options.scenario)
            )
        if options.scheduler_cpus is not None:
            contender.settings["cpus"] = sorted(os.sched_getaffinity(contender.pid))
            apiserver = cp.pids["kube-apiserver"]
            contender.settings["control_plane_cpus"] = sorted(os.sched_getaffinity(apiserver))
        launched.append(contender)
        _sample(sampler, contender)
        say(f"{name}: ready after {contender.startup_seconds:.1f}s")

    def launch_from_starter() -> Awaitable[None]:
        return asyncio.wrap_future(starter.submit(launch))

    sampler.start()
    try:
        if mode != BACKLOG:
            launch()
        pace = f" at {rate:,.1f}/s" if rate else ""
        say(f"{name}: creating {total} pods{pace} ({through})")
        measured = cp.call(
            lambda client: _measure(
                client,
                total,
                creating,
                selector,
                options,
                launch_from_starter if mode == BACKLOG else None,
                say,
                f"{name} at {rate:,.1f}/s" if rate else name,
            ),
            max(options.create_concurrency, openloop.DEFAULT_IN_FLIGHT if rate else 0)
            + (CHURN_IN_FLIGHT if options.lifetime is not None else 0)
            + 4,
        )
    finally:
        sampler.stop()
        for contender in launched:
            _stop(contender, options)
        starter.shutdown()
    (contender,) = launched
    bound, clock = measured.bound, measured.clock
    end = max((t for t, _ in bound.values()), default=clock)
    say(f"{name}: {measured.outcome}: {len(bound)}/{total} bound in {end - clock:.1f}s")
    usage = {
        process: ProcessUsage(**vars(sampler.usage(process, clock, end)))
        for process in [SCHEDULER, *contender.helpers, *CONTROL_PLANE, BENCH, MACHINE]
    }
    say(f"{name}: checking the placements")
    keys = sorted(measured.created.answered)
    report = cp.call(lambda client: _check(client, set(keys)))
    if storage is not None and name not in (contenders.RAW_BIND, contenders.RAW_BIND_EVENTS):
        held = storage
        claims = cp.call(lambda client: bench_volumes.check(client, held))
        for violation in claims.violations:
            report.add(violation)
        report.violation_count += claims.violation_count - len(claims.violations)
        report.claims_checked = claims.claims_checked
    if (
        devices is not None
        and options.devices is not None
        and name
        not in (
            contenders.RAW_BIND,
            contenders.RAW_BIND_EVENTS,
        )
    ):
        published, per_pod = devices, options.devices.gpus_per_pod
        allocated = cp.call(lambda client: bench_devices.check(client, published, per_pod))
        for violation in allocated.violations:
            report.add(violation)
        report.violation_count += allocated.violation_count - len(allocated.violations)
        report.claims_checked += allocated.claims_checked
    checked: dict[str, Any] = {"checked": True, "ok": report.ok, **vars(report)}
    if name in (contenders.RAW_BIND, contenders.RAW_BIND_EVENTS):
        # It ignores every constraint: only the server's counts are of interest.
        checked = {
            "checked": False,
            "why": "binds without scheduling",
            "run_pods_found": report.run_pods_found,
            "run_pods_unbound": report.run_pods_unbound,
        }

    async def delete(client: ApiClient) -> float:
        began = time.monotonic()
        if plan is not None:
            await rollout.delete_controllers(client, plan)
        await delete_burst(client, keys, selector, options.create_concurrency, options.timeout)
        if storage is not None:
            await bench_volumes.delete(client, storage, options.create_concurrency)
        if devices is not None:
            await bench_devices.delete(client, devices, options.create_concurrency)
        return time.monotonic() - began

    if discard:
        say(f"{name}: its pods go with the control plane")
        delete_seconds = None
    else:
        say(f"{name}: deleting the pods")
        delete_seconds = cp.call(delete, options.create_concurrency + 4)
    run = _result(name, total, measured, usage, contender, checked, delete_seconds, mode)
    if options.lifetime is not None:
        run.lifetime_deletions = len(measured.deleted)
        # Those inside the window the figures cover (a run that stalls waits on after it).
        run.lifetime_deletions_in_window = sum(t <= end for t in measured.deleted.values())
    run.stages = stages.read_stages(contenders.metrics_file(contender.log, contender.name))
    run.created_through = rollout.describe(plan) if plan is not None else {"bare_pods": total}
    if rate:
        run.offered_rate = rate
        run.share_of_ceiling = share
        run.creator = openloop.creator_summary(rate, total, measured.created, measured.lag)
        run.keep_up = openloop.keep_up(run.create_times, run.bind_times)
    return run


# The longest wait for a contender to be ready, at least: both sides list every node first,
# which took 35-65 s at 50,000 nodes on the loaded two-CPU machine (issue 28).
START_TIMEOUT = 120.0
START_SECONDS_PER_NODE = 0.004


def start_timeout(scenario: Scenario) -> float:
    """How long a contender may take to list the scenario's cluster and be ready."""
    return max(START_TIMEOUT, scenario.fleet.nodes * START_SECONDS_PER_NODE)


def _stop(contender: contenders.Contender, options: Options) -> None:
    """Stops a contender and keeps its log and saved metrics in ``options.logs`` (if given)."""
    contender.stop()
    if options.logs is not None:
        options.logs.mkdir(parents=True, exist_ok=True)
        metrics = contenders.metrics_file(contender.log, contender.name)
        if metrics.exists():
            shutil.copyfile(metrics, options.logs / metrics.name)
        else:  # not a run's figures under another run's name
            (options.logs / metrics.name).unlink(missing_ok=True)
        saved = options.logs / contender.log.name
        shutil.copyfile(contender.log, saved)
        contender.log = saved


def _sample(sampler: Sampler, contender: contenders.Contender) -> None:
    """Samples the contender's scheduler and each of its helper processes."""
    sampler.add(SCHEDULER, contender.pid, contender.began)
    for helper, pid in contender.helpers.items():
        sampler.add(helper, pid, contender.began)


def _run_hpa(cp: ControlPlane, name: str, options: Options, say: Say) -> RunResult:
    """One contender under the ``hpa`` scenario (see ``hpa``): the Deployment and its
    autoscaler are created with the contender running, the load driven for the
    scenario's duration, then both deleted."""
    settings = options.hpa or hpa.HpaSettings()
    run_id = f"{name}-{secrets.token_hex(3)}"
    selector = f"{RUN_LABEL}={run_id}"
    namespace = f"hpa-{run_id}"
    sampler = Sampler({**{c: cp.pids[c] for c in CONTROL_PLANE}, BENCH: os.getpid()})
    say(f"{name}: starting")
    contender = contenders.start(
        cp, name, options.qps, options.burst, start_timeout(options.scenario)
    )
    _sample(sampler, contender)
    say(f"{name}: ready after {contender.startup_seconds:.1f}s")
    deployment, autoscaler = hpa.objects(settings, namespace, name, {RUN_LABEL: run_id})

    async def drive(client: ApiClient) -> tuple[BindWatch, hpa.Driver, float]:
        watch = BindWatch(client, selector)
        watching = asyncio.create_task(watch.run())
        await watch.listed.wait()
        namespace_object = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace},
        }
        await client.create(namespace_object)
        clock = time.monotonic()
        await client.create(deployment)
        await client.create(autoscaler)
        driver = hpa.Driver(client, settings, namespace, selector, clock)
        driving = asyncio.create_task(driver.run())
        try:
            while time.monotonic() - clock < settings.duration:
                await asyncio.sleep(1.0)
                if options.progress is not None:
                    options.progress(name, len(watch.bound), len(watch.seen), len(watch.seen))
        finally:
            for task in (driving, watching):
                task.cancel()
            await asyncio.gather(driving, watching, return_exceptions=True)
        return watch, driver, clock

    sampler.start()
    try:
        say(f"{name}: autoscaling for {settings.duration:.0f}s")
        watch, driver, clock = cp.call(drive)
    finally:
        sampler.stop()
        _stop(contender, options)
    end = clock + settings.duration
    usage = {
        process: ProcessUsage(**vars(sampler.usage(process, clock, end)))
        for process in [SCHEDULER, *contender.helpers, *CONTROL_PLANE, BENCH, MACHINE]
    }
    keys = sorted(watch.seen)
    report = cp.call(lambda client: _check(client, set(keys)))
    checked: dict[str, Any] = {"checked": True, "ok": report.ok, **vars(report)}
    say(f"{name}: {len(watch.bound)} of {len(watch.seen)} pods bound; deleting them")

    async def delete(client: ApiClient) -> float:
        began = time.monotonic()
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        for path in (
            f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/{hpa.NAME}",
            f"/apis/apps/v1/namespaces/{namespace}/deployments/{hpa.NAME}",
        ):
            await client.request("DELETE", path, body)
        await delete_burst(client, keys, selector, options.create_concurrency, options.timeout)
        await client.request("DELETE", f"/api/v1/namespaces/{namespace}")
        return time.monotonic() - began

    delete_seconds = cp.call(delete, options.create_concurrency + 4)
    created = Created()
    created.answered.update(watch.seen)
    if watch.seen:
        created.first, created.last = min(watch.seen.values()), max(watch.seen.values())
    measured = Measured(created, dict(watch.bound), "autoscaled", clock, [])
    run = _result(name, len(keys), measured, usage, contender, checked, delete_seconds, HPA)
    run.created_through = {"deployments": 1, "horizontal_pod_autoscalers": 1}
    run.autoscaling = driver.samples
    run.bind_latencies = sorted(
        (round(at - clock, 3), round(max(0.0, at - watch.seen[key]), 3))
        for key, (at, _) in watch.bound.items()
        if key in watch.seen
    )
    return run


@dataclass
class Measured:
    created: Created
    bound: dict[str, tuple[float, str]]  # key -> (time.monotonic() seen bound, node)
    outcome: str
    clock: float  # when the run's clock started (time.monotonic())
    lag: list[float]  # open loop: each send's lag behind its due time
    # The API server's counters just before the clock and just after the last bind.
    api_before: dict[str, float] = field(default_factory=dict)
    api_after: dict[str, float] = field(default_factory=dict)
    # Churn: the pods deleted once they had lived the scenario's lifetime, and when the
    # API server answered each deletion (time.monotonic()).
    deleted: dict[str, float] = field(default_factory=dict)


Creating = Callable[[ApiClient, Created, list[float]], Coroutine[Any, Any, None]]


def _creator(
    options: Options,
    plan: rollout.Rollout | None,
    through: str,
    pods: list[Object],
    rate: float | None,
) -> Creating:
    """How the run creates its burst: ``(client, created, lag)`` -> done."""

    async def creating(client: ApiClient, created: Created, lag: list[float]) -> None:
        if plan is not None:
            created.first = time.monotonic()
            if through == SCALE_UP:
                await rollout.scale_up(client, plan, options.create_concurrency)
            else:
                await rollout.create(client, plan)
            created.last = time.monotonic()
        elif rate:
            await openloop.create_paced(client, pods, rate, created, lag)
        else:
            await create_burst(client, pods, options.create_concurrency, created)

    return creating


async def _measure(
    client: ApiClient,
    total: int,
    creating: Creating,
    selector: str,
    options: Options,
    launch: Callable[[], Awaitable[None]] | None,
    say: Say,
    label: str,
) -> Measured:
    """Creates the burst and waits for its ``total`` binds. With ``launch`` (backlog mode)
    every pod is created first and the clock starts when ``launch`` starts the contender.
    Pods the controllers create count as created when the watch first sees them."""
    watch = BindWatch(client, selector)
    watching = asyncio.create_task(watch.run())
    created = Created()
    lag: list[float] = []
    reporting = asyncio.create_task(_report_progress(options, label, watch, created, total))
    try:
        await watch.listed.wait()
        if launch is None:  # the clock starts now; in backlog mode, at the launch
            await _settle(client, options, say)
            api_before = await apitraffic.scrape(client)
        clock = time.monotonic()
        creation = asyncio.create_task(creating(client, created, lag))
        deleted: dict[str, float] = {}
        churning = asyncio.create_task(_churn(client, watch, options.lifetime, deleted))
        try:
            if launch is not None:
                await creation
                await _all_seen(watch, total, options.timeout)
                say(f"{total} pods created in {time.monotonic() - created.first:.1f}s")
                await _settle(client, options, say)
                api_before = await apitraffic.scrape(client)
                clock = time.monotonic()
                await launch()  # on a thread of its own (its start waits on its own loop)
            outcome = await wait_bound(
                watch, total, creation, watching, options.settle, options.timeout
            )
            api_after = await apitraffic.scrape(client)
        finally:
            # Creation only still runs after a timeout or a failed start.
            for task in (creation, churning):
                task.cancel()
            await asyncio.gather(creation, churning, return_exceptions=True)
    finally:
        if options.progress is not None:
            options.progress(label, len(watch.bound), len(watch.seen), total)
        watching.cancel()
        reporting.cancel()
        await asyncio.gather(watching, reporting, return_exceptions=True)
    # Pods made by controllers count as created when the watch first saw them.
    for key, seen in watch.seen.items():
        created.answered.setdefault(key, seen)
    if created.answered:
        created.last = max(created.last, *created.answered.values())
    reconnects = ", ".join(f"{n} {why}" for why, n in watch.rewatches.items()) or "none"
    say(f"measuring watch: reconnects {reconnects}; {watch.relists} relists after 410 Gone")
    dropped = apitraffic.terminated(api_before, api_after)
    if dropped:
        closed = ", ".join(f"{count} of {resource}" for resource, count in sorted(dropped.items()))
        say(f"the API server closed slow watchers (their buffer full): {closed}")
    bound = dict(watch.bound)
    return Measured(created, bound, outcome, clock, lag, api_before, api_after, deleted)


# The longest wait for the API server to settle before a clock starts.
SETTLE_TIMEOUT = 120.0


async def _settle(client: ApiClient, options: Options, say: Say) -> None:
    """Waits until the API server serves next to no writes (apitraffic.wait_quiet): the
    garbage collector's deletes of the last run's pods and the controllers' events about
    this run's creation would otherwise land in the window of whichever contender comes
    next, and cost it the API server's CPU."""
    settled, waited = await apitraffic.wait_quiet(client, min(options.timeout, SETTLE_TIMEOUT))
    if not settled:
        say(f"the API server still served writes after {waited:.0f}s; starting anyway")
    elif waited > 3:
        say(f"the API server settled in {waited:.0f}s")


async def _all_seen(watch: BindWatch, total: int, timeout: float) -> None:
    """Waits until the watch has seen ``total`` pods (controllers create them after their
    own creation returned)."""
    deadline = time.monotonic() + timeout
    while len(watch.seen) < total:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {len(watch.seen)} of {total} pods appeared")
        watch.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watch.changed.wait(), 0.25)


# Lifetime deletions in flight at once: at a few hundred binds a second one at a time
# would fall behind the lifetimes (the API server answers in milliseconds to tens of them).
CHURN_IN_FLIGHT = 32


async def _churn(
    client: ApiClient, watch: BindWatch, lifetime: float | None, deleted: dict[str, float]
) -> None:
    """Deletes each pod ``lifetime`` seconds after the measuring watch saw it bound
    (churn scenarios), whichever contender bound it, adding it to ``deleted`` once the API
    server answered (a deletion still in flight when the run ends is cancelled)."""
    if lifetime is None:
        return
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    slots = asyncio.Semaphore(CHURN_IN_FLIGHT)
    flying: set[asyncio.Task[None]] = set()

    async def delete(key: str) -> None:
        namespace, name = key.split("/", 1)
        try:
            await client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", body)
            deleted[key] = time.monotonic()
        except ApiError as error:
            if error.status == 404:  # already gone
                deleted[key] = time.monotonic()
        finally:
            slots.release()

    # The watch adds pods to ``bound`` in the order it saw them bound: the due ones lead.
    position = 0
    try:
        while True:
            now = time.monotonic()
            for key, (at, _) in list(watch.bound.items())[position:]:
                if at + lifetime > now:
                    break
                position += 1
                await slots.acquire()
                task = asyncio.create_task(delete(key))
                flying.add(task)
                task.add_done_callback(flying.discard)
            await asyncio.sleep(0.25)
    finally:
        for task in flying:
            task.cancel()
        await asyncio.gather(*flying, return_exceptions=True)


async def _report_progress(
    options: Options, label: str, watch: BindWatch, created: Created, total: int
) -> None:
    if options.progress is None:
        return
    while True:
        options.progress(label, len(watch.bound), len(watch.seen), total)
        await asyncio.sleep(0.5)


async def _check(client: ApiClient, run_keys: set[str]) -> feasibility.Feasibility:
    node_list = await readback.list_all(client, "/api/v1/nodes")
    pod_list = await readback.list_all(client, "/api/v1/pods")
    return feasibility.check(node_list, pod_list, run_keys)


def _result(
    name: str,
    total: int,
    measured: Measured,
    usage: dict[str, ProcessUsage],
    contender: contenders.Contender,
    checked: dict[str, Any],
    delete_seconds: float | None,
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
        pods=total,
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
        delete_seconds=None if delete_seconds is None else round(delete_seconds, 2),
        feasibility=checked,
        settings=contender.settings,
        log=str(contender.log),
        create_times=sorted(round(t - start, 4) for t in created.answered.values())
        if mode != BACKLOG
        else [],
        bind_times=bind_times,
        latencies=sorted(round(value, 4) for value in latencies),
        api_traffic=apitraffic.per_pod(measured.api_before, measured.api_after, len(bind_times)),
    )
