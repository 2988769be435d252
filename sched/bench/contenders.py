"""The schedulers a benchmark compares, started against the control plane one at a time.

- ``kubesalvo``: ``kubesalvo run --config FILE`` in its own process, one profile named
  after the contender, no leader election, client QPS and burst as given.
- ``kube-scheduler``: upstream kube-scheduler of the control plane's release
  (``cluster.baseline``), that release's defaults (plugins, adaptive
  percentageOfNodesToScore, and from v1.35 opportunistic batching), client QPS and burst
  raised the same way and protobuf.
- ``kube-scheduler-all-nodes``: the same with percentageOfNodesToScore 100, so that it
  scores every feasible node as kubesalvo does.
- ``kube-scheduler-extender``: ``kube-scheduler`` with ``extenders:`` naming a
  ``kubesalvo extender`` (its default agents, congestion and safe) that it asks to filter
  and prioritize every pod, node cache on (names only): what kube-scheduler's pods/s is
  with kubesalvo as its extender. The extender's own process is sampled apart
  (``helpers``).
- ``raw-bind``: ``rawbind``, binding without scheduling, round robin, through kubesalvo's
  own client, informers and binder (client QPS and burst as given): the ceiling.
- ``raw-bind-events``: the same, also writing the one Scheduled event per pod that
  kube-scheduler and kubesalvo write: the fair ceiling for a scheduler that behaves like
  kube-scheduler.

Each name is also the ``schedulerName`` its pods carry, and the key of its pid in the
control plane's state, so that ``cluster down`` stops a contender left running.
"""

from __future__ import annotations

import asyncio
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from kubesalvo.sched.cluster import processes
from kubesalvo.sched.cluster.baseline import start_kube_scheduler
from kubesalvo.sched.cluster.controlplane import ControlPlane, StartError, wait_healthy

KUBESALVO = "kubesalvo"
KUBE_SCHEDULER = "kube-scheduler"
KUBE_SCHEDULER_ALL_NODES = "kube-scheduler-all-nodes"
KUBE_SCHEDULER_EXTENDER = "kube-scheduler-extender"
RAW_BIND = "raw-bind"
RAW_BIND_EVENTS = "raw-bind-events"
CONTENDERS = (
    KUBESALVO,
    KUBE_SCHEDULER,
    KUBE_SCHEDULER_ALL_NODES,
    KUBE_SCHEDULER_EXTENDER,
    RAW_BIND,
    RAW_BIND_EVENTS,
)
# Top-level KubeSchedulerConfiguration settings of each upstream contender.
UPSTREAM_SETTINGS: dict[str, dict[str, Any]] = {
    KUBE_SCHEDULER: {},
    KUBE_SCHEDULER_ALL_NODES: {"percentageOfNodesToScore": 100},
    KUBE_SCHEDULER_EXTENDER: {},
}
# The helper process of kube-scheduler-extender (its pid key and usage name).
EXTENDER = "extender"


@dataclass
class Contender:
    """A started scheduler: its process, how it was configured, how to stop it."""

    name: str
    pid: int
    log: Path
    settings: dict[str, Any]
    began: float  # time.monotonic() when it was started
    startup_seconds: float
    _stop: Callable[[], None] = field(repr=False)
    # Processes it runs besides the scheduler (name -> pid), each sampled apart.
    helpers: dict[str, int] = field(default_factory=dict)

    def stop(self) -> None:
        self._stop()


def start(cp: ControlPlane, name: str, qps: float, burst: int, timeout: float = 120.0) -> Contender:
    """Starts contender ``name`` and waits until it is ready to schedule."""
    starters = {
        KUBESALVO: _start_kubesalvo,
        KUBE_SCHEDULER: _start_kube_scheduler,
        KUBE_SCHEDULER_ALL_NODES: _start_kube_scheduler_all_nodes,
        KUBE_SCHEDULER_EXTENDER: _start_kube_scheduler_extender,
        RAW_BIND: _start_raw_bind,
        RAW_BIND_EVENTS: _start_raw_bind_events,
    }
    if name not in starters:
        raise ValueError(f"unknown scheduler {name!r}; accepted: {', '.join(CONTENDERS)}")
    return starters[name](cp, qps, burst, timeout)


def _stopper(cp: ControlPlane, name: str, pid: int) -> Callable[[], None]:
    def stop() -> None:
        processes.stop([pid], grace=15)
        cp.pids.pop(name, None)
        cp.save()

    return stop


def _work_dir(cp: ControlPlane, name: str) -> Path:
    work = cp.dir / "schedulers" / name
    work.mkdir(parents=True, exist_ok=True)
    return work


def _spawn(cp: ControlPlane, name: str, command: list[str]) -> tuple[int, Path, Callable[[], None]]:
    """Starts ``python -m <command>`` as contender ``name``: its output goes to the control
    plane's log of that name and its pid into the control plane's state (for ``cluster
    down``). Returns the pid, the log and how to stop it.

    Like kube-scheduler's (``cluster.baseline``), it ends when the calling thread ends, so
    that a killed benchmark leaves no contender behind."""
    log = cp.log(name)
    argv = [sys.executable, "-m", *command]
    env = {"PYTHONUNBUFFERED": "1"}
    cp.pids[name] = pid = processes.start(argv, log, env=env, die_with_parent=True)
    cp.save()
    return pid, log, _stopper(cp, name, pid)


def _start_kube_scheduler(cp: ControlPlane, qps: float, burst: int, timeout: float) -> Contender:
    return _start_upstream(cp, KUBE_SCHEDULER, qps, burst, timeout)


def _start_kube_scheduler_all_nodes(
    cp: ControlPlane, qps: float, burst: int, timeout: float
) -> Contender:
    return _start_upstream(cp, KUBE_SCHEDULER_ALL_NODES, qps, burst, timeout)


def _start_kube_scheduler_extender(
    cp: ControlPlane, qps: float, burst: int, timeout: float
) -> Contender:
    began = time.monotonic()
    (port,) = processes.free_ports(1)
    command = [
        "kubesalvo.sched.cli",
        "extender",
        f"--kubeconfig={cp.kubeconfig}",
        f"--listen={processes.LOOPBACK}:{port}",
    ]
    pid, _, stop_extender = _spawn(cp, EXTENDER, command)
    url = f"http://{processes.LOOPBACK}:{port}"
    try:
        asyncio.run(wait_healthy(cp, EXTENDER, f"{url}/readyz", timeout))
    except BaseException:
        stop_extender()
        raise
    entry = {
        "urlPrefix": url,
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 1,
        "enableHTTPS": False,
        "nodeCacheCapable": True,
        "httpTimeout": "10s",
    }
    try:
        contender = _start_upstream(
            cp, KUBE_SCHEDULER_EXTENDER, qps, burst, timeout, {"extenders": [entry]}, began
        )
    except BaseException:
        stop_extender()
        raise
    stop_scheduler = contender.stop

    def stop() -> None:
        try:
            stop_scheduler()
        finally:
            stop_extender()

    extender = {
        "command": " ".join(command),
        "agents": "the defaults (congestion and safe, weight 1, default args)",
    }
    return replace(
        contender,
        settings={**contender.settings, "extender": extender},
        _stop=stop,
        helpers={EXTENDER: pid},
    )


def _start_upstream(
    cp: ControlPlane,
    name: str,
    qps: float,
    burst: int,
    timeout: float,
    more: dict[str, Any] | None = None,
    began: float | None = None,
) -> Contender:
    began = time.monotonic() if began is None else began
    extra = {**UPSTREAM_SETTINGS[name], **(more or {}), "profiles": [{"schedulerName": name}]}
    scheduler = start_kube_scheduler(cp, qps, burst, extra, name=name, timeout=timeout)
    scoring = (
        "percentageOfNodesToScore 100 (every feasible node scored)"
        if "percentageOfNodesToScore" in extra
        else "percentageOfNodesToScore left at its adaptive default"
    )
    extending = "; filter and prioritize through kubesalvo extender" if more else ""
    settings = {
        "binary": str(cp.bin_dir / "kube-scheduler"),
        "kubernetes": cp.kubernetes,
        "config": yaml.safe_load(scheduler.config.read_text()),
        "notes": f"{cp.kubernetes} defaults (plugins, feature gates); {scoring}{extending}",
    }
    return Contender(
        name,
        scheduler.pid,
        scheduler.log,
        settings,
        began,
        time.monotonic() - began,
        scheduler.stop,
    )


def kubesalvo_config(cp: ControlPlane, qps: float, burst: int) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(cp.kubeconfig), "qps": qps, "burst": burst},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": KUBESALVO, **_release_plugins(cp)}],
    }


def _minor(cp: ControlPlane) -> int:
    return int(cp.kubernetes.lstrip("v").split(".")[1])


def release_flags(cp: ControlPlane) -> list[str]:
    """kubesalvo's flags for deciding as the control plane's kube-scheduler release does
    by default: kubesalvo's defaults are v1.34's, and v1.37 turned StorageCapacityScoring
    on (VolumeBinding scores by capacity)."""
    return ["--feature-gates=StorageCapacityScoring=true"] if _minor(cp) >= 37 else []


def _release_plugins(cp: ControlPlane) -> dict[str, Any]:
    """The profile's plugins for the same: v1.37's default profile scores DynamicResources
    (weight 2), which kubesalvo runs only where a profile names it."""
    if _minor(cp) < 37:
        return {}
    return {"plugins": {"score": {"enabled": [{"name": "DynamicResources", "weight": 2}]}}}


def _start_kubesalvo(cp: ControlPlane, qps: float, burst: int, timeout: float) -> Contender:
    began = time.monotonic()
    config = _work_dir(cp, KUBESALVO) / "config.yaml"
    settings = kubesalvo_config(cp, qps, burst)
    config.write_text(yaml.safe_dump(settings, sort_keys=False))
    metrics_port, debug_port = processes.free_ports(2)
    command = [
        "kubesalvo.sched.cli",
        "run",
        f"--config={config}",
        f"--metrics-address={processes.LOOPBACK}",
        f"--metrics-port={metrics_port}",
        f"--debug-port={debug_port}",
        *release_flags(cp),
    ]
    pid, log, stop = _spawn(cp, KUBESALVO, command)
    base = f"http://{processes.LOOPBACK}:{metrics_port}"
    stop = _scraping_first(stop, f"{base}/metrics", metrics_file(log, KUBESALVO))
    url = f"{base}/readyz"
    try:
        asyncio.run(wait_healthy(cp, KUBESALVO, url, timeout))
    except BaseException:
        stop()
        raise
    return Contender(
        KUBESALVO,
        pid,
        log,
        {"command": " ".join(command), "config": settings},
        began,
        time.monotonic() - began,
        stop,
    )


def metrics_file(log: Path, name: str) -> Path:
    """Where contender ``name``'s /metrics is saved when it stops: beside its log."""
    return log.with_name(f"{name}-metrics.txt")


def _scraping_first(stop: Callable[[], None], url: str, out: Path) -> Callable[[], None]:
    """``stop``, after saving the scheduler's /metrics to ``out``: its histograms (queue to
    bound, attempt, request durations) say where a run's latency went. An earlier run's
    file goes at once, so that a failed scrape leaves none rather than a stale one."""
    out.unlink(missing_ok=True)

    def scrape_and_stop() -> None:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                out.write_bytes(response.read())
        except OSError as error:
            print(f"could not scrape {url}: {error}", file=sys.stderr)
        finally:
            stop()

    return scrape_and_stop


def _start_raw_bind(
    cp: ControlPlane, qps: float, burst: int, timeout: float, name: str = RAW_BIND
) -> Contender:
    began = time.monotonic()
    ready = _work_dir(cp, name) / "ready"
    ready.unlink(missing_ok=True)
    events = name == RAW_BIND_EVENTS
    command = [
        "kubesalvo.sched.bench.rawbind",
        f"--cluster-dir={cp.dir}",
        f"--scheduler-name={name}",
        f"--qps={qps}",
        f"--burst={burst}",
        f"--ready-file={ready}",
    ]
    if events:
        command.append("--events")
    pid, log, stop = _spawn(cp, name, command)
    deadline = time.monotonic() + timeout
    while not ready.exists():
        if not processes.is_running(pid) or time.monotonic() > deadline:
            stop()
            raise StartError(f"{name} did not start; end of {log}:\n{processes.log_tail(log)}")
        time.sleep(0.1)
    sends = "one binding" + (" and one Scheduled event" if events else "")
    settings = {
        "command": " ".join(command),
        "notes": "round robin over schedulable nodes through kubesalvo's client, informers "
        f"and binder (client QPS {qps:g}, burst {burst}); per pod it sends {sends}",
    }
    return Contender(name, pid, log, settings, began, time.monotonic() - began, stop)


def _start_raw_bind_events(cp: ControlPlane, qps: float, burst: int, timeout: float) -> Contender:
    return _start_raw_bind(cp, qps, burst, timeout, RAW_BIND_EVENTS)
