"""Helpers of the runtime reliability tests: scales, restarting a control-plane process
with kill -9, and what a burst's outcome is checked against.

``restart(cp, component)`` kills one of the control plane's processes (etcd or
kube-apiserver) with SIGKILL, starts it again with the same flags, data and port, and
waits until it serves again; it returns when it was killed and when it was back. The
exactly-once check reads the fault proxy's record of the bindings the API server
accepted, and the feasibility check (tests/helpers/feasibility.py) recomputes every
node's load from the API objects.
"""

from __future__ import annotations

import asyncio
import os
import signal
import ssl
import time
from dataclasses import dataclass
from typing import Any

import pytest

from kubesalvo.sched.cluster import controlplane, processes
from kubesalvo.sched.cluster.controlplane import ControlPlane
from kubesalvo.sched.faultproxy.proxy import FaultProxy


@dataclass(frozen=True)
class Scale:
    pods: int
    nodes: int
    max_burst: int

    def __str__(self) -> str:
        return f"{self.pods}-pods-{self.nodes}-nodes"


SMALL = Scale(pods=300, nodes=500, max_burst=100)
LARGE = Scale(pods=10_000, nodes=1_000, max_burst=1_000)
SCALES = [SMALL, pytest.param(LARGE, marks=pytest.mark.reliability, id=str(LARGE))]


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


_ARGS = {"etcd": controlplane.etcd_args, "kube-apiserver": controlplane.apiserver_args}


def _health(cp: ControlPlane, component: str) -> tuple[str, dict[str, str], Any]:
    if component == "etcd":
        return f"http://{processes.LOOPBACK}:{cp.ports['etcd']}/health", {}, False
    tls = ssl.create_default_context(cafile=str(cp.ca_file))
    return f"{cp.server}/readyz", {"Authorization": f"Bearer {cp.token}"}, tls


def restart(cp: ControlPlane, component: str, down: float = 2.0) -> tuple[float, float]:
    """kill -9 ``component``, keep it down ``down`` seconds, start it again; returns the
    wall-clock times of the kill and of the moment the API server answered ready again."""
    pid = cp.pids[component]
    killed = time.time()
    os.killpg(pid, signal.SIGKILL)
    while processes.is_running(pid):
        time.sleep(0.02)
    time.sleep(down)
    # Started from the test's main thread: it dies with the test session.
    cp.pids[component] = processes.start(
        _ARGS[component](cp), cp.log(component), die_with_parent=True
    )
    cp.save()
    for name in (component, "kube-apiserver"):
        url, headers, tls = _health(cp, name)
        asyncio.run(controlplane.wait_healthy(cp, name, url, 120.0, headers, tls))
    return killed, time.time()


def bound_exactly_once(proxies: list[FaultProxy], bound: list[dict[str, Any]]) -> None:
    """Each bound pod's binding went through one of ``proxies``: accepted once, or sent on
    and left uncertain - the API server died before it answered, or answered a server
    error when etcd died under it - for it may have been stored all the same (the
    scheduler must then find the pod bound, not bind it again). No pod's binding was
    accepted twice."""
    accepted: dict[str, int] = {}
    uncertain: set[str] = set()
    for proxy in proxies:
        for path, count in proxy.stats.binds_accepted.items():
            accepted[path] = accepted.get(path, 0) + count
        uncertain.update(proxy.stats.binds_uncertain)
    paths = {
        f"/api/v1/namespaces/{p['metadata']['namespace']}/pods/{p['metadata']['name']}/binding"
        for p in bound
    }
    ours = {path: count for path, count in accepted.items() if path in paths}
    unexplained = paths - set(ours) - uncertain
    assert not unexplained, f"{len(unexplained)} bound pods without a bind sent through the proxy"
    assert set(ours.values()) <= {1}, "a pod was bound twice"
