"""Upstream kube-scheduler with ``extenders:`` pointing at a running ``kubesalvo extender``,
scheduling real pods on the real control plane (kwok nodes of each test's own pool).

Each test starts the extender (a subprocess, ``--kubeconfig`` on the control plane) and
a kube-scheduler of its own whose KubeSchedulerConfiguration lists it, creates pods for
that scheduler restricted to the test's nodes, and reads the placements back from the
API server. The pools are built so that kube-scheduler's own scores alone would choose
differently (one big node attracts everything), which makes each agent's effect visible.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesalvo.core.quantity import milli_value
from kubesalvo.sched.cluster import ApiError, controlplane, nodes, processes
from kubesalvo.sched.cluster.baseline import start_kube_scheduler
from kubesalvo.sched.extender.agents.usage import (
    CPU_ANNOTATION,
    MEMORY_ANNOTATION,
)
from kubesalvo.sched.extender.agents.usage import (
    NODE_METRICS_PATH as NODE_METRICS,
)
from tests.helpers.objects import priority_class
from tests.sched.cluster.test_metrics_server import built_metrics_server
from tests.sched.test_app import delete_pods, list_objects

pytestmark = pytest.mark.integration


def kwok_node(name: str, pool: str, cpu: str, labels=None, annotations=None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "e2e-pool": pool, **(labels or {})},
            "annotations": {"kwok.x-k8s.io/node": "fake", **(annotations or {})},
        },
        "status": {
            "capacity": {"cpu": cpu, "memory": "256Gi", "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": "256Gi", "pods": "110"},
        },
    }


def make_pod(namespace, name, scheduler, pool, cpu="100m", labels=None, **spec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {"e2e-pool": pool},
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                }
            ],
            **spec,
        },
    }


@contextmanager
def extender(control_plane, tmp_path: Path, agents: list[dict[str, Any]]) -> Iterator[str]:
    """``kubesalvo extender`` on a free port, ready (its watches synced); yields its URL."""
    config = tmp_path / "extender.yaml"
    config.write_text(yaml.safe_dump({"agents": agents}))
    (port,) = processes.free_ports(1)
    log = tmp_path / "extender.log"
    argv = [
        sys.executable,
        "-m",
        "kubesalvo.sched.cli",
        "extender",
        f"--config={config}",
        f"--kubeconfig={control_plane.kubeconfig}",
        f"--listen=127.0.0.1:{port}",
    ]
    pid = processes.start(argv, log, die_with_parent=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/readyz", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or not processes.is_running(pid):
                pytest.fail("extender not ready:\n" + processes.log_tail(log, 40))
            time.sleep(0.2)
        yield url
    finally:
        processes.stop([pid], grace=10)


def extender_entry(url: str, cache: bool, bind: bool = False, **extra: Any) -> dict[str, Any]:
    entry = {
        "urlPrefix": url,
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "preemptVerb": "preempt",
        "weight": 5,
        "enableHTTPS": False,
        "nodeCacheCapable": cache,
        "httpTimeout": "10s",
        **extra,
    }
    if bind:
        entry["bindVerb"] = "bind"
    return entry


@contextmanager
def kube_scheduler(control_plane, name: str, extenders: list[dict[str, Any]]):
    extra = {"profiles": [{"schedulerName": name}], "extenders": extenders}
    scheduler = start_kube_scheduler(control_plane, extra=extra, name=name, timeout=120)
    try:
        yield scheduler
    finally:
        scheduler.stop()


def placements(control_plane, namespace: str, names: list[str], timeout: float = 90) -> dict:
    """Pod name -> node, once every named pod is bound."""
    deadline = time.monotonic() + timeout
    while True:
        pods = list_objects(control_plane, f"/api/v1/namespaces/{namespace}/pods")
        where = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}
        if all(where.get(name) for name in names):
            return {name: where[name] for name in names}
        if time.monotonic() > deadline:
            pytest.fail(f"pods not all bound within {timeout:.0f}s: {where}")
        time.sleep(0.5)


def metric(url: str, needle: str) -> float:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(needle):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.fixture
def pool(control_plane) -> str:
    return f"x{secrets.token_hex(3)}"


def create_nodes(control_plane, made: list[dict[str, Any]]) -> None:
    control_plane.create(made)


def burst_pool(control_plane, pool: str) -> None:
    create_nodes(
        control_plane,
        [kwok_node(f"{pool}-big", pool, "64")]
        + [kwok_node(f"{pool}-s{i}", pool, "4") for i in range(3)],
    )


def test_congestion_spreads_pods_with_names_only_and_the_bind_verb(
    control_plane, namespace, pool, tmp_path
):
    # The same pods on an identical pool by kube-scheduler alone: all on the big node.
    alone = f"{pool}-alone"
    burst_pool(control_plane, alone)
    plain = [make_pod(namespace, f"a{i}", f"plain-{pool}", alone) for i in range(12)]
    with kube_scheduler(control_plane, f"plain-{pool}", []):
        control_plane.create(plain)
        baseline = placements(control_plane, namespace, [p["metadata"]["name"] for p in plain])
    assert set(baseline.values()) == {f"{alone}-big"}
    burst_pool(control_plane, pool)
    agents = [
        {
            "name": "congestion",
            "args": {"halfLifeSeconds": 600, "threshold": 3, "startingWeight": 0, "churnWeight": 1},
        }
    ]
    name = f"ext-{pool}"
    pods = [make_pod(namespace, f"b{i}", name, pool) for i in range(12)]
    where: dict[str, str] = {}
    with (
        extender(control_plane, tmp_path, agents) as url,
        kube_scheduler(control_plane, name, [extender_entry(url, cache=True, bind=True)]),
    ):
        # One at a time, each bound before the next comes: the extender has counted every
        # earlier bind when kube-scheduler asks it to filter. (In a burst kube-scheduler
        # filters the next pods while the binds of the earlier ones are still in flight,
        # which no extender sees, so a burst's spread is not exact.)
        for pod in pods:
            control_plane.create([pod])
            where |= placements(control_plane, namespace, [pod["metadata"]["name"]])
        binds = metric(url, 'kubesalvo_extender_requests_total{agent="all",code="200",verb="bind"}')
    per_node = Counter(where.values())
    # A node's fourth bind takes its churn (1 each, barely fading in seconds with a 600 s
    # half-life) past the threshold of 3: no node gets a fifth pod, so 12 pods take 3 nodes or more.
    assert max(per_node.values()) <= 4, per_node
    assert len(per_node) >= 3, per_node
    assert binds == 12


def test_policy_pins_a_team_to_its_pool_with_full_node_objects(
    control_plane, namespace, pool, tmp_path
):
    create_nodes(
        control_plane,
        [
            kwok_node(f"{pool}-blue0", pool, "4", labels={"pool-role": "blue"}),
            kwok_node(f"{pool}-blue1", pool, "4", labels={"pool-role": "blue"}),
            kwok_node(f"{pool}-big", pool, "64"),
        ],
    )
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        yaml.safe_dump(
            {
                "rules": [
                    {
                        "name": "blue-pool",
                        "podSelector": {"matchLabels": {"team": "blue"}},
                        "requiredNodeSelector": {"matchLabels": {"pool-role": "blue"}},
                    }
                ]
            }
        )
    )
    agents = [{"name": "policy", "args": {"rulesFile": str(rules)}}]
    name = f"ext-{pool}"
    blue = [make_pod(namespace, f"blue{i}", name, pool, labels={"team": "blue"}) for i in range(6)]
    red = [make_pod(namespace, f"red{i}", name, pool, labels={"team": "red"}) for i in range(3)]
    with (
        extender(control_plane, tmp_path, agents) as url,
        kube_scheduler(control_plane, name, [extender_entry(url, cache=False)]),
    ):
        control_plane.create(blue + red)
        where = placements(control_plane, namespace, [p["metadata"]["name"] for p in blue + red])
        filters = metric(
            url, 'kubesalvo_extender_requests_total{agent="all",code="200",verb="filter"}'
        )
    assert {where[f"blue{i}"] for i in range(6)} <= {f"{pool}-blue0", f"{pool}-blue1"}
    # Red is not pinned: the big node's room attracts it.
    assert {where[f"red{i}"] for i in range(3)} == {f"{pool}-big"}
    assert filters >= 9


def test_safe_keeps_pods_off_a_node_whose_usage_is_high_by_annotation(
    control_plane, namespace, pool, tmp_path
):
    hot = {CPU_ANNOTATION: "60", MEMORY_ANNOTATION: "10Gi"}
    create_nodes(
        control_plane,
        [
            kwok_node(f"{pool}-hot", pool, "64", annotations=hot),
            kwok_node(f"{pool}-c0", pool, "4", annotations={CPU_ANNOTATION: "500m"}),
            kwok_node(f"{pool}-c1", pool, "4"),
        ],
    )
    agents = [{"name": "safe", "args": {"threshold": 0.8}}]
    name = f"ext-{pool}"
    pods = [make_pod(namespace, f"s{i}", name, pool) for i in range(6)]
    with (
        extender(control_plane, tmp_path, agents) as url,
        kube_scheduler(control_plane, name, [extender_entry(url, cache=True)]),
    ):
        control_plane.create(pods)
        where = placements(control_plane, namespace, [p["metadata"]["name"] for p in pods])
        assert metric(url, 'kubesalvo_extender_requests_total{agent="all",code="200"') >= 12
    assert f"{pool}-hot" not in where.values(), where
    log = (tmp_path / "extender.log").read_text()
    assert "metrics.k8s.io not usable" in log  # the fallback was taken, and said so


def test_safe_keeps_pods_off_a_node_whose_usage_metrics_server_reports_high(
    control_plane, namespace, pool, tmp_path
):
    """The real metrics API: metrics-server (through the aggregation layer) scrapes kwok's
    emulated kubelet of each node of the pool; a pod using 60 cores (by kwok's usage
    annotation) makes its node hot, and the safe agent reads NodeMetrics, not annotations."""
    binary = built_metrics_server()
    hot = f"{pool}-hot"
    pool_nodes = [
        kwok_node(hot, pool, "64"),
        kwok_node(f"{pool}-c0", pool, "4"),
        kwok_node(f"{pool}-c1", pool, "4"),
    ]
    # With the annotation that says where kwok serves each node's kubelet metrics.
    create_nodes(control_plane, [nodes.scrapeable(node) for node in pool_nodes])
    busy = make_pod(namespace, "busy", "none", pool, cpu="10m", nodeName=hot)
    busy["metadata"]["annotations"] = {controlplane.USAGE_CPU_ANNOTATION: "60"}
    control_plane.create([busy])
    selector = f"e2e-pool={pool}"
    asyncio.run(
        controlplane.start_metrics_server(
            control_plane, binary, timeout=120, die_with_parent=True, node_selector=selector
        )
    )
    try:
        deadline = time.monotonic() + 90
        while True:  # a rate needs two scrapes, 10 s apart
            try:
                found = control_plane.call(lambda c: c.request("GET", f"{NODE_METRICS}/{hot}"))
            except ApiError as error:
                assert error.status in (404, 503), error
                found = None
            if found and milli_value(found["usage"]["cpu"]) > 50_000:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"metrics.k8s.io did not report {hot} busy within 90 s: {found}")
            time.sleep(2)
        agents = [{"name": "safe", "args": {"threshold": 0.8, "sampleSeconds": 2}}]
        name = f"ext-{pool}"
        pods = [make_pod(namespace, f"m{i}", name, pool) for i in range(6)]
        with (
            extender(control_plane, tmp_path, agents) as url,
            kube_scheduler(control_plane, name, [extender_entry(url, cache=True)]),
        ):
            time.sleep(3)  # the agent's first poll of metrics.k8s.io
            control_plane.create(pods)
            where = placements(control_plane, namespace, [p["metadata"]["name"] for p in pods])
    finally:
        asyncio.run(controlplane.stop_metrics_server(control_plane))
    assert hot not in where.values(), where
    log = (tmp_path / "extender.log").read_text()
    assert "reading node usage from metrics.k8s.io" in log
    assert "metrics.k8s.io not usable" not in log


def test_an_ignorable_extender_that_is_down_does_not_stop_scheduling(
    control_plane, namespace, pool
):
    create_nodes(control_plane, [kwok_node(f"{pool}-n0", pool, "4")])
    (port,) = processes.free_ports(1)  # nothing listens there
    name = f"ext-{pool}"
    pods = [make_pod(namespace, f"i{i}", name, pool) for i in range(3)]
    entry = extender_entry(f"http://127.0.0.1:{port}", cache=True, ignorable=True)
    with kube_scheduler(control_plane, name, [entry]):
        control_plane.create(pods)
        where = placements(control_plane, namespace, [p["metadata"]["name"] for p in pods])
    assert set(where.values()) == {f"{pool}-n0"}


def test_preemption_asks_the_extender_which_victims_to_take(
    control_plane, namespace, pool, tmp_path
):
    create_nodes(control_plane, [kwok_node(f"{pool}-only", pool, "1")])
    low, high = f"low-{pool}", f"high-{pool}"
    control_plane.create([priority_class(low, 10), priority_class(high, 1000)])
    agents = [{"name": "example"}]
    name = f"ext-{pool}"
    victim = make_pod(namespace, "victim", name, pool, cpu="800m", priorityClassName=low)
    urgent = make_pod(namespace, "urgent", name, pool, cpu="800m", priorityClassName=high)
    with (
        extender(control_plane, tmp_path, agents) as url,
        kube_scheduler(control_plane, name, [extender_entry(url, cache=True)]),
    ):
        control_plane.create([victim])
        placements(control_plane, namespace, ["victim"])
        control_plane.create([urgent])
        where = placements(control_plane, namespace, ["urgent"], timeout=120)
        preempts = metric(
            url, 'kubesalvo_extender_requests_total{agent="all",code="200",verb="preempt"}'
        )
    assert where["urgent"] == f"{pool}-only"
    assert preempts >= 1
    left = list_objects(control_plane, f"/api/v1/namespaces/{namespace}/pods")
    assert "victim" not in {
        p["metadata"]["name"] for p in left if not p["metadata"].get("deletionTimestamp")
    }
    delete_pods(control_plane, left)
