"""`kubesalvo run` as a process: HTTPS with the certificate it is given (a client that
trusts only that certificate connects and verifies the host name), /metrics refused to
an anonymous caller, the health paths open to anyone. (The tests' plain port, which
SchedulerProcess asks for, serves beside it.)"""

from __future__ import annotations

import secrets
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from kubesalvo.sched.serving.certs import self_signed_pair
from tests.sched.test_app import ELECTION_OFF, SchedulerProcess, free_port

pytestmark = pytest.mark.integration


def own_profile(name: str) -> str:
    """The config with a profile of its own name: on the session's shared control plane a
    scheduler under the default name would bind other tests' pending pods."""
    return ELECTION_OFF + f"profiles:\n- schedulerName: {name}-{secrets.token_hex(3)}\n"


def get(url: str, context: ssl.SSLContext) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30, context=context) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_the_given_certificate_is_served_and_metrics_need_a_token(control_plane, tmp_path):
    cert, key = self_signed_pair("127.0.0.1")
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    port = free_port()
    process = SchedulerProcess(
        tmp_path,
        control_plane.kubeconfig,
        own_profile("serving"),
        "serving",
        args=(
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={tmp_path / 'tls.crt'}",
            f"--tls-private-key-file={tmp_path / 'tls.key'}",
        ),
    )
    try:
        process.wait_ready()
        trusting = ssl.create_default_context(cadata=cert.decode())
        base = f"https://127.0.0.1:{port}"
        for path in ("/healthz", "/livez", "/readyz"):
            assert get(base + path, trusting) == 200
        assert get(base + "/metrics", trusting) == 403
        # A client that trusts only the system's CAs refuses the connection.
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            get(base + "/healthz", ssl.create_default_context())
        log = process.log.read_text()
        assert f"serving health/metrics on https://127.0.0.1:{port}, http://127.0.0.1:" in log
    finally:
        process.kill()


def test_a_port_in_use_stops_the_start_with_exit_1_and_says_which(control_plane, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(own_profile("port-in-use"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kubesalvo.sched.cli",
                "run",
                f"--config={config}",
                f"--kubeconfig={control_plane.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--debug-port={free_port()}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    assert f"kubesalvo run: cannot listen on 127.0.0.1:{port}: " in done.stderr
    assert "Traceback" not in done.stderr
