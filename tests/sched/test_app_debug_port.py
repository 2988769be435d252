"""``kubesalvo run --debug-port 0``: the debug pages are off, and no port of the process
listens but the ones it was asked for (here the plain metrics port); a port out of range
is refused before anything starts. With the port on, a caller without the token of the
0600 file the scheduler wrote is refused (401)."""

from __future__ import annotations

import stat
import subprocess
import sys
import urllib.error
import urllib.request

import psutil
import pytest

from tests.sched.test_app import CONFIG, SchedulerProcess


def test_a_debug_port_out_of_range_is_refused_with_exit_2():
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "run", "--debug-port", "-1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "-1 is not a port (0-65535)" in done.stderr


@pytest.mark.integration
def test_debug_port_0_turns_the_debug_pages_off(control_plane, tmp_path):
    process = SchedulerProcess(
        tmp_path,
        control_plane.kubeconfig,
        CONFIG.format(max_burst=100),
        "nodebug",
        args=("--debug-port", "0"),
    )
    try:
        process.wait_ready()
        listening = {
            connection.laddr.port
            for connection in psutil.Process(process.process.pid).net_connections("inet")
            if connection.status == psutil.CONN_LISTEN
        }
        assert listening == {process.metrics_port}, process.tail()
        assert "debug pages on no port" in process.log.read_text()
    finally:
        process.kill()


@pytest.mark.integration
def test_enable_profiling_false_leaves_the_memory_page_out(control_plane, tmp_path):
    config = CONFIG.format(max_burst=100) + "enableProfiling: false\n"
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "noprofiling")
    try:
        process.wait_ready()
        base = f"http://127.0.0.1:{process.debug_port}"
        assert process.get(f"{base}/debug/memory")[0] == 404
        assert process.get(f"{base}/debug/queue")[0] == 200
    finally:
        process.kill()


@pytest.mark.integration
def test_the_debug_pages_refuse_a_caller_without_the_token_of_the_file(control_plane, tmp_path):
    process = SchedulerProcess(
        tmp_path, control_plane.kubeconfig, CONFIG.format(max_burst=100), "guarded"
    )
    try:
        process.wait_ready()
        base = f"http://127.0.0.1:{process.debug_port}"
        assert stat.S_IMODE(process.debug_token_file.stat().st_mode) == 0o600
        token = process.debug_token
        for path in ("/debug/queue", "/debug/explain?pod=a/b", "/debug/memory", "/ui/",
                     "/ui/api/overview"):  # fmt: skip
            for headers in ({}, {"Authorization": "Bearer not-the-token"}):
                request = urllib.request.Request(base + path, headers=headers)
                with pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(request, timeout=30)
                assert refused.value.code == 401, path
        assert process.get(f"{base}/debug/queue")[0] == 200  # with the token
        # A browser's way in: once with ?token=, then by the cookie it was given.
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with opener.open(f"{base}/ui/api/overview?token={token}", timeout=30) as answer:
            assert answer.status == 200 and "token" not in answer.url
        with opener.open(f"{base}/debug/queue", timeout=30) as answer:
            assert answer.status == 200
        assert token not in process.log.read_text()
        assert str(process.debug_token_file) in process.log.read_text()
    finally:
        process.kill()
