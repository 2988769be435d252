"""The web view on the secure port, when ``--web-view-on-secure-port`` asks for it: behind
the port's delegated authentication and authorization through the real API server. A
ServiceAccount allowed to `get` /ui and /ui/* reads the pages and their data; one allowed
only /metrics, an anonymous caller and an unknown token are refused. Without the secure
port the flag is refused naming it."""

from __future__ import annotations

import argparse
import json
import ssl
import urllib.error
import urllib.request

import pytest

from kubesalvo.sched.serving.options import OptionsError, add_flags, options_from_args
from tests.helpers.deploy import bind_rules, delete_cluster_rbac, service_account_token
from tests.sched.test_app import CONFIG, SchedulerProcess, free_port

WEB_READER = [{"nonResourceURLs": ["/ui", "/ui/*"], "verbs": ["get"]}]
METRICS_READER = [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_the_flag_needs_the_secure_port():
    parser = argparse.ArgumentParser()
    add_flags(parser)
    args = parser.parse_args(["--secure-port", "0", "--web-view-on-secure-port"])
    with pytest.raises(OptionsError, match="--web-view-on-secure-port"):
        options_from_args(args)


def get(url: str, token: str | None = None) -> tuple[int, bytes]:
    # The scheduler's certificate is self-signed, made at its start; this is loopback.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.mark.integration
def test_the_web_view_on_the_secure_port_answers_only_those_allowed_it(
    control_plane, namespace, tmp_path
):
    reader = service_account_token(control_plane, namespace, "web-reader")
    metrics_only = service_account_token(control_plane, namespace, "metrics-reader")
    roles = [
        bind_rules(control_plane, namespace, "web-reader", WEB_READER),
        bind_rules(control_plane, namespace, "metrics-reader", METRICS_READER),
    ]
    port = free_port()
    args = ("--secure-port", str(port), "--bind-address", "127.0.0.1", "--web-view-on-secure-port")
    process = SchedulerProcess(
        tmp_path, control_plane.kubeconfig, CONFIG.format(max_burst=100), "secure", args
    )
    try:
        process.wait_ready()
        base = f"https://127.0.0.1:{port}/ui"
        status, body = get(f"{base}/api/overview", reader)
        assert status == 200, body
        assert set(json.loads(body)) >= {"queue", "qos", "gangs", "bursts"}
        status, body = get(f"{base}/", reader)
        assert status == 200 and b'src="static/overview.js"' in body
        status, body = get(f"{base}/api/overview", metrics_only)
        assert status == 403
        assert b'cannot get path \\"/ui/api/overview\\"' in body
        assert get(f"{base}/api/overview")[0] == 403  # system:anonymous
        assert get(f"{base}/api/overview", "not-a-token")[0] == 401
    finally:
        process.kill()
        for role in roles:
            delete_cluster_rbac(control_plane, role)
