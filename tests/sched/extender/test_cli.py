"""``kubesalvo extender`` as a real process: serves, stops cleanly on SIGINT and SIGTERM,
refuses a bad configuration with exit code 2."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.request

import msgspec
import pytest
import yaml

from kubesalvo.sched.cluster.processes import free_ports
from kubesalvo.sched.extender.cli import parse_listen
from tests.helpers.extender import node, pod


def extender(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "kubesalvo.sched.cli", "extender", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={"PATH": "/usr/bin:/bin", "KUBERNETES_SERVICE_HOST": ""},
    )


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"extender exited early: {process.stdout.read().decode()}")  # type: ignore[union-attr]
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    pytest.fail("extender never answered /healthz")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_process_serves_and_exits_cleanly_on_a_signal(signum):
    (port,) = free_ports(1)
    url = f"http://127.0.0.1:{port}"
    process = extender("--listen", f"127.0.0.1:{port}")
    try:
        wait_healthy(url, process)
        body = msgspec.json.encode({"Pod": pod(), "Nodes": {"items": [node("n1")]}})
        request = urllib.request.Request(f"{url}/filter", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=5) as answer:
            result = msgspec.json.decode(answer.read())
        assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == ["n1"]
        process.send_signal(signum)
        assert process.wait(timeout=20) == 0
        output = process.stdout.read().decode()  # type: ignore[union-attr]
        assert f"received {signal.Signals(signum).name}: stopping" in output
        assert "extender stopped" in output
        # with no watches to wait for, the heap of the start is frozen at once
        assert re.search(r"watches synced; \d+ objects frozen", output)
        assert "Traceback" not in output
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_bad_configuration_exits_2_with_the_field_path(tmp_path):
    path = tmp_path / "extender.yaml"
    path.write_text(yaml.safe_dump({"agents": [{"name": "congestion", "weight": -1}]}))
    process = extender("--config", str(path))
    try:
        assert process.wait(timeout=30) == 2
        output = process.stdout.read().decode()  # type: ignore[union-attr]
    finally:
        if process.poll() is None:
            process.kill()
    assert f"{path}: agents[0].weight: -1; accepted: 0 to 100" in output
    assert "Traceback" not in output


def test_listen_must_be_host_and_port():
    assert parse_listen("127.0.0.1:8888") == ("127.0.0.1", 8888)
    assert parse_listen("[::1]:0") == ("::1", 0)
    for bad in ("8888", "host:", "h:99999", ":80"):
        with pytest.raises(Exception, match="HOST:PORT"):
            parse_listen(bad)
