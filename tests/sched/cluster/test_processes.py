"""Port picking and stopping whole process groups."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from kubesalvo.sched.cluster import processes


def test_free_ports_are_distinct_and_bindable_on_loopback() -> None:
    ports = processes.free_ports(8)
    assert len(set(ports)) == 8
    for port in ports:
        with socket.socket() as sock:
            sock.bind((processes.LOOPBACK, port))


def test_stop_ends_the_process_and_its_children(tmp_path: Path) -> None:
    log = tmp_path / "log"
    child_pid_file = tmp_path / "child"
    pid = processes.start(
        ["sh", "-c", f"sleep 60 & echo $! > {child_pid_file}; echo started; wait"], log
    )
    while not (child_pid_file.exists() and child_pid_file.read_text().strip()):
        time.sleep(0.01)
    child = int(child_pid_file.read_text())
    assert processes.is_running(pid)
    assert os.getpgid(child) == pid  # the child shares the new session's group

    processes.stop([pid], grace=5)
    assert not processes.is_running(pid)
    assert not processes.is_running(child)
    assert log.read_text() == "started\n"


def test_stop_kills_what_ignores_sigterm(tmp_path: Path) -> None:
    pid = processes.start(["sh", "-c", "trap '' TERM; echo ready; sleep 60"], tmp_path / "log")
    while "ready" not in (tmp_path / "log").read_text():
        time.sleep(0.01)
    processes.stop([pid], grace=0.3)
    assert not processes.is_running(pid)


def test_log_tail_keeps_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("".join(f"line {i}\n" for i in range(50)))
    assert processes.log_tail(log, 2) == "line 48\nline 49"
    assert processes.log_tail(tmp_path / "absent") == "(no log)"


def test_process_tied_to_its_parent_dies_when_the_parent_is_killed(tmp_path: Path) -> None:
    # A parent that starts a tied sleeper, reports its pid, then waits to be killed.
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path;"
            "from kubesalvo.sched.cluster import processes;"
            "print(processes.start(['sleep', '60'], Path(sys.argv[1]), die_with_parent=True),"
            " flush=True); time.sleep(60)",
            str(tmp_path / "log"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert processes.is_running(child)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 5
    while processes.is_running(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not processes.is_running(child)
