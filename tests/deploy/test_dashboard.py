"""deploy/grafana/kubesalvo.json against what a real scheduler exports.

A `kubesalvo run` on the real control plane (QosAware sorting its queue, Coscheduling on)
schedules pods, fails one that fits nowhere and holds a gang short of its minimum; its
/metrics is scraped as Prometheus would, over HTTPS with a ServiceAccount token that holds
deploy/base's ClusterRole kubesalvo:metrics-reader. A `kubesalvo extender` answers a
filter request and its /metrics is scraped too (the extender panels' series). Every metric each
panel's PromQL names (and every exact label value it selects, such as
result="scheduled") must be among the scraped series. The panels of kubernetes-mixin's
"Kubernetes / Scheduler" dashboard are checked the same way, to say which of them work.
"""

from __future__ import annotations

import json
import re
import secrets
import ssl
import time
import urllib.request
from typing import Any

import pytest

from tests.helpers.deploy import (
    DEPLOY,
    bind_rules,
    delete_cluster_rbac,
    find,
    get_pod,
    node_pool,
    pool_pod,
    render,
    service_account_token,
)
from tests.helpers.extender import node, pod
from tests.helpers.promql import parse_errors
from tests.sched.extender.test_cli import extender, wait_healthy
from tests.sched.test_app import SchedulerProcess, free_port

DASHBOARD = DEPLOY / "grafana" / "kubesalvo.json"
KEYWORDS = {"and", "or", "unless", "bool", "offset"}
# Labels Prometheus adds at scrape time; the scheduler does not export them.
TARGET_LABELS = {"job", "instance", "cluster"}
# kubernetes-mixin's "Kubernetes / Scheduler" (dashboards/scheduler.libsonnet): each panel
# and the series its queries select, with the mixin's selectors left out.
MIXIN_PANELS = {
    "Up": ["up"],
    "Scheduling Rate": [
        "scheduler_e2e_scheduling_duration_seconds_count",
        "scheduler_binding_duration_seconds_count",
        "scheduler_scheduling_algorithm_duration_seconds_count",
        "scheduler_volume_scheduling_duration_seconds_count",
    ],
    "Scheduling latency 99th Quantile": [
        "scheduler_e2e_scheduling_duration_seconds_bucket",
        "scheduler_binding_duration_seconds_bucket",
        "scheduler_scheduling_algorithm_duration_seconds_bucket",
        "scheduler_volume_scheduling_duration_seconds_bucket",
    ],
    "Kube API Request Rate": ["rest_client_requests_total"],
    "Post Request Latency 99th Quantile": ["rest_client_request_duration_seconds_bucket"],
    "Get Request Latency 99th Quantile": ["rest_client_request_duration_seconds_bucket"],
    "Memory": ["process_resident_memory_bytes"],
    "CPU usage": ["process_cpu_seconds_total"],
    "Goroutines": ["go_goroutines"],
}
# What deploy/README.md says about them: panels whose every series kubesalvo exports, and
# panels that show some of their series.
MIXIN_WORKING = {
    "Memory",
    "CPU usage",
    "Kube API Request Rate",
    "Post Request Latency 99th Quantile",
    "Get Request Latency 99th Quantile",
}
MIXIN_PARTIAL = {"Scheduling Rate", "Scheduling latency 99th Quantile"}


def selectors(expr: str) -> list[tuple[str, dict[str, str]]]:
    """The metric names a PromQL expression selects, each with its exact-match labels."""
    expr = re.sub(
        r'"(?:[^"\\]|\\.)*"', lambda m: m.group(0).replace("(", "").replace(")", ""), expr
    )
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges, [$__rate_interval] or [5m]
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    found = []
    for match in re.finditer(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?", expr):
        name, matchers, call = match.groups()
        if call or name in KEYWORDS:
            continue
        labels = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', matchers or ""))
        found.append((name, labels))
    return found


def test_the_promql_reader_finds_names_and_exact_labels():
    expr = (
        'sum by (result) (rate(scheduler_schedule_attempts_total{job=~"$job", result="scheduled"}'
        "[$__rate_interval])) / ignoring(le) histogram_quantile(0.99, sum by (le) "
        '(rate(kubesalvo_kernel_seconds_bucket{job=~"$job"}[5m]))) and up'
    )
    assert selectors(expr) == [
        ("scheduler_schedule_attempts_total", {"result": "scheduled"}),
        ("kubesalvo_kernel_seconds_bucket", {}),
        ("up", {}),
    ]


def scraped_series(text: str) -> dict[str, list[dict[str, str]]]:
    series: dict[str, list[dict[str, str]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ", line)
        assert match, line
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        series.setdefault(match.group(1), []).append(labels)
    return series


def missing(series: dict[str, list[dict[str, str]]], name: str, labels: dict[str, str]) -> bool:
    wanted = {k: v for k, v in labels.items() if k not in TARGET_LABELS}
    return not any(wanted.items() <= found.items() for found in series.get(name, []))


@pytest.fixture(scope="module")
def scrape(control_plane, tmp_path_factory) -> dict[str, list[dict[str, str]]]:
    """/metrics of a real `kubesalvo run` that has scheduled pods, read over HTTPS with a
    token allowed to read it (the ClusterRole of deploy/base)."""
    folder = tmp_path_factory.mktemp("dashboard")
    namespace = f"dashboard-{secrets.token_hex(3)}"
    control_plane.create(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    )
    reader_rules = find(
        render(control_plane, DEPLOY / "base"), "ClusterRole", "kubesalvo:metrics-reader"
    )
    role = bind_rules(control_plane, namespace, "prometheus", reader_rules["rules"])
    token = service_account_token(control_plane, namespace, "prometheus")
    pool = f"dashboard-{secrets.token_hex(3)}"
    node_pool(control_plane, pool, 2, cpu="1")
    port = free_port()
    config = (
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n"
        "  leaderElect: true\n"
        f"  resourceName: dashboard-{pool}\n"
        f"  resourceNamespace: {namespace}\n"
        # QoS and gang panels: QosAware sorts the queue, Coscheduling holds gangs.
        "profiles:\n"
        "- schedulerName: kubesalvo\n"
        "  plugins:\n"
        "    queueSort: {enabled: [{name: QosAware}], disabled: [{name: '*'}]}\n"
        "    preBind: {enabled: [{name: QosAware}]}\n"
        "    postBind: {enabled: [{name: QosAware}]}\n"
        "    multiPoint: {enabled: [{name: Coscheduling}]}\n"
    )
    process = SchedulerProcess(
        folder,
        control_plane.kubeconfig,
        config,
        "dashboard",
        args=("--bind-address", "127.0.0.1", "--secure-port", str(port)),
    )
    try:
        process.wait_ready()
        names = [f"p{i}" for i in range(20)]
        control_plane.create([pool_pod(namespace, name, pool) for name in names])
        control_plane.create([pool_pod(namespace, "nowhere", pool, cpu="64")])
        # Two members of a gang of three: it waits, holding no room.
        gang = [pool_pod(namespace, f"gang-{i}", pool) for i in range(2)]
        for member in gang:
            member["metadata"]["labels"] = {"podGroup": "trio", "minAvailable": "3"}
        control_plane.create(gang)
        deadline = time.monotonic() + 60
        for name in names:
            while not ((get_pod(control_plane, namespace, name) or {}).get("spec") or {}).get(
                "nodeName"
            ):
                assert time.monotonic() < deadline, process.tail()
                time.sleep(0.2)
        process.wait_metric(
            "scheduler_schedule_attempts_total", 1, 30, profile="kubesalvo", result="unschedulable"
        )
        process.wait_metric("kubesalvo_gangs_waiting", 1, 30)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        request = urllib.request.Request(
            f"https://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            text = response.read().decode()
        series = scraped_series(text)
        for name, found in scraped_series(extender_metrics()).items():
            series.setdefault(name, []).extend(found)
        # Prometheus adds `up` for every target it scrapes.
        series["up"] = [{}]
        return series
    finally:
        process.kill()
        delete_cluster_rbac(control_plane, role)


def extender_metrics() -> str:
    """/metrics of a real `kubesalvo extender` after one /filter request."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = extender("--listen", f"127.0.0.1:{port}")
    try:
        wait_healthy(url, process)
        body = json.dumps({"Pod": pod(), "Nodes": {"items": [node("n1")]}}).encode()
        request = urllib.request.Request(f"{url}/filter", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as answer:
            return str(answer.read().decode())
    finally:
        process.kill()
        process.wait()


def panels() -> list[dict[str, Any]]:
    return json.loads(DASHBOARD.read_text())["panels"]


def test_the_dashboard_has_the_panels_the_issue_lists():
    titles = " | ".join(p["title"] for p in panels()).lower()
    for wanted in [
        "throughput",
        "attempts by result",
        "scheduling attempt duration",
        "pod scheduling sli duration",
        "pending pods by queue",
        "burst size",
        "kernel time",
        "binds in flight",
        "preemptions",
        "qos against slo",
        "gangs",
        "gc pauses",
        "extender requests",
        "extender latency",
    ]:
        assert wanted in titles, wanted
    for key in ("id", "title"):
        values = [p[key] for p in panels()]
        assert len(values) == len(set(values)), key
    for panel in panels():
        assert panel["datasource"]["uid"] == "${datasource}"
        assert panel["targets"], panel["title"]


@pytest.mark.integration
@pytest.mark.parametrize("title", [p["title"] for p in panels()])
def test_every_series_a_panel_queries_is_exported(scrape, title):
    (panel,) = [p for p in panels() if p["title"] == title]
    for target in panel["targets"]:
        for name, labels in selectors(target["expr"]):
            assert not missing(scrape, name, labels), (title, target["expr"], name, labels)


@pytest.mark.integration
def test_the_template_variables_find_the_scheduler(scrape):
    dashboard = json.loads(DASHBOARD.read_text())
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        query = variable["query"]["query"]
        inner = re.fullmatch(r"label_values\((.*), *\w+\)", query)
        assert inner, query
        for name, labels in selectors(inner.group(1)):
            assert not missing(scrape, name, labels), query


@pytest.mark.integration
def test_which_kubernetes_mixin_scheduler_panels_work(scrape):
    working = {title for title, names in MIXIN_PANELS.items() if all(n in scrape for n in names)}
    partial = {
        title
        for title, names in MIXIN_PANELS.items()
        if title not in working and any(n in scrape for n in names) and title != "Up"
    }
    assert working - {"Up"} == MIXIN_WORKING
    assert partial == MIXIN_PARTIAL


def test_every_panel_query_parses_with_prometheus_parser():
    # Grafana's range variable becomes a plain range; $job and $instance sit in strings.
    exprs = [
        target["expr"].replace("$__rate_interval", "5m")
        for panel in panels()
        for target in panel["targets"]
    ]
    assert parse_errors(exprs) == ""
