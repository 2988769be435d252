"""Upstream kube-scheduler against a local control plane: the baseline of every benchmark.

Its client limits come only from the KubeSchedulerConfiguration when ``--config`` is
given; they are raised (the default 50 QPS would cap binding near 50 pods/s, and the
limiter, not the scheduler, would be measured). Its pid is recorded in the control
plane's state, so ``cluster down`` stops it too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesalvo.sched.cluster import processes
from kubesalvo.sched.cluster.controlplane import ControlPlane, secure_serving_args, wait_healthy

CLIENT_QPS = 5000
CLIENT_BURST = 5000


def scheduler_config(
    kubeconfig: Path,
    qps: float = CLIENT_QPS,
    burst: int = CLIENT_BURST,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A KubeSchedulerConfiguration for one non-leader-electing scheduler; ``extra`` keys
    (``profiles``, ``percentageOfNodesToScore``, ...) are added at the top level."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {
            "kubeconfig": str(kubeconfig),
            "qps": qps,
            "burst": burst,
            "contentType": "application/vnd.kubernetes.protobuf",
        },
        "leaderElection": {"leaderElect": False},
        **(extra or {}),
    }


@dataclass
class KubeScheduler:
    """A running kube-scheduler; ``stop()`` ends it (also on leaving a ``with`` block)."""

    control_plane: ControlPlane
    name: str
    pid: int
    port: int
    config: Path

    @property
    def log(self) -> Path:
        return self.control_plane.log(self.name)

    @property
    def metrics_url(self) -> str:
        return f"https://{processes.LOOPBACK}:{self.port}/metrics"

    def stop(self, grace: float = 10.0) -> None:
        processes.stop([self.pid], grace)
        self.control_plane.pids.pop(self.name, None)
        self.control_plane.save()

    def __enter__(self) -> KubeScheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def kube_scheduler_args(cp: ControlPlane, config: Path, port: int, cert_dir: Path) -> list[str]:
    return [
        str(cp.bin_dir / "kube-scheduler"),
        f"--config={config}",
        *secure_serving_args(cp, port, cert_dir),
    ]


def start_kube_scheduler(
    cp: ControlPlane,
    qps: float = CLIENT_QPS,
    burst: int = CLIENT_BURST,
    extra: Mapping[str, Any] | None = None,
    name: str = "kube-scheduler",
    timeout: float = 60.0,
) -> KubeScheduler:
    """Starts kube-scheduler (config in ``<dir>/schedulers/<name>/``, log in
    ``<dir>/logs/<name>.log``) and waits until its /readyz answers 200: its
    ``sched-handler-sync`` check passes only once its informers have synced and their
    handlers have taken the initial lists in (/healthz answers long before, while a large
    cluster is still being listed).

    It ends when the calling thread ends, so call this from the main thread (or one that
    lives as long as the scheduler should).
    """
    if name in cp.pids and processes.is_running(cp.pids[name]):
        raise RuntimeError(f"{name} is already running (pid {cp.pids[name]})")
    work = cp.dir / "schedulers" / name
    work.mkdir(parents=True, exist_ok=True)
    config = work / "config.yaml"
    config.write_text(yaml.safe_dump(scheduler_config(cp.kubeconfig, qps, burst, extra)))
    (port,) = processes.free_ports(1)
    # Owned by the caller (its handle stops it): it must not outlive a killed benchmark.
    argv = kube_scheduler_args(cp, config, port, work)
    cp.pids[name] = processes.start(argv, cp.log(name), die_with_parent=True)
    cp.save()
    scheduler = KubeScheduler(cp, name, cp.pids[name], port, config)
    url = f"https://{processes.LOOPBACK}:{port}/readyz"
    try:
        asyncio.run(wait_healthy(cp, name, url, timeout))
    except BaseException:
        scheduler.stop()
        raise
    return scheduler
