"""``kubesalvo extender --metrics-secure-port``: /metrics over HTTPS behind the API server's
authentication and authorization, as the scheduler's secure port, so that Prometheus can
scrape an extender whose protocol port listens on loopback. A ServiceAccount allowed to
`get` /metrics reads it; an anonymous caller gets 403, an unknown token 401; without
credentials the flag is refused."""

from __future__ import annotations

import json
import socket
import time
import urllib.request

import pytest

from tests.helpers.deploy import bind_rules, delete_cluster_rbac, service_account_token
from tests.helpers.extender import node, pod
from tests.sched.extender.test_cli import extender, wait_healthy
from tests.sched.test_app import free_port
from tests.sched.web.test_web_view_secure import METRICS_READER, get


@pytest.mark.integration
def test_the_extenders_metrics_port_answers_only_those_allowed_it(control_plane, namespace):
    token = service_account_token(control_plane, namespace, "prometheus")
    role = bind_rules(control_plane, namespace, "prometheus", METRICS_READER)
    port, metrics_port = free_port(), free_port()
    process = extender(
        "--kubeconfig", str(control_plane.kubeconfig), "--listen", f"127.0.0.1:{port}",
        "--metrics-secure-port", str(metrics_port), "--metrics-bind-address", "127.0.0.1",
    )  # fmt: skip
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process)
        body = json.dumps({"Pod": pod(), "Nodes": {"items": [node("n1")]}}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/filter", data=body, method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
        url = f"https://127.0.0.1:{metrics_port}/metrics"
        deadline = time.monotonic() + 30
        while (status := get(url, token))[0] != 200:
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
        assert (
            b'kubesalvo_extender_requests_total{agent="all",code="200",verb="filter"}'
            in (status[1])
        )
        assert get(url)[0] == 403  # system:anonymous
        assert get(url, "not-a-token")[0] == 401
        assert get(f"https://127.0.0.1:{metrics_port}/healthz")[0] == 200
    finally:
        process.kill()
        process.wait()
        delete_cluster_rbac(control_plane, role)


def test_the_metrics_port_needs_the_api_servers_credentials():
    process = extender("--metrics-secure-port", str(free_port()))
    try:
        assert process.wait(timeout=60) == 2
        output = process.stdout.read().decode()  # type: ignore[union-attr]
    finally:
        if process.poll() is None:
            process.kill()
    assert "--metrics-secure-port needs the API server's credentials" in output


@pytest.mark.integration
def test_a_busy_metrics_port_is_named_in_one_line_and_exit_1(control_plane):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        process = extender(
            "--kubeconfig", str(control_plane.kubeconfig), "--listen", f"127.0.0.1:{free_port()}",
            "--metrics-secure-port", str(busy), "--metrics-bind-address", "127.0.0.1",
        )  # fmt: skip
        try:
            assert process.wait(timeout=60) == 1
            output = process.stdout.read().decode()  # type: ignore[union-attr]
        finally:
            if process.poll() is None:
                process.kill()
    assert f"kubesalvo extender: cannot serve on 127.0.0.1:{busy}: " in output
    assert "Traceback" not in output
