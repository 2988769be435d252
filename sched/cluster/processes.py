"""Starting and stopping the control-plane processes.

Each process runs detached in its own session (so that Ctrl-C in the terminal that ran
``cluster up`` does not reach it, and so that stopping it reaches every child), with its
output in a log file. Stopping sends SIGTERM to the process group, then SIGKILL to what
is left after a grace period.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

LOOPBACK = "127.0.0.1"
_PR_SET_PDEATHSIG = 1


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct TCP ports that are free on ``host`` right now.

    All sockets stay open until every port is chosen, so the kernel never hands out the
    same port twice in one call.
    """
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _kill_me_with_parent() -> None:
    # PR_SET_PDEATHSIG: the kernel sends SIGKILL when the thread that started us ends.
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def start(
    argv: Sequence[str],
    log: Path,
    env: dict[str, str] | None = None,
    die_with_parent: bool = False,
) -> int:
    """Starts ``argv`` detached, output appended to ``log``; returns its pid.

    With ``die_with_parent`` the process is killed when the calling thread ends, even by
    SIGKILL or a crash: a test session that is killed leaves no servers behind. (So call
    it from a thread that lives as long as the process should, such as the main thread.)
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **(env or {})},
            preexec_fn=_kill_me_with_parent if die_with_parent else None,
        )
    return proc.pid


def is_running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    _reap(pid)
    try:
        with open(f"/proc/{pid}/stat") as stat:
            # The state letter follows the parenthesised command name.
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _reap(pid: int) -> None:
    # Processes started by this Python are its children: collect their exit status so
    # they do not linger as zombies (which still answer kill(pid, 0)).
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def stop(pids: Iterable[int], grace: float = 10.0) -> None:
    """SIGTERM each process group, wait up to ``grace`` seconds, then SIGKILL the rest.

    The pids are process-group leaders (started with ``start``), so the group id is the pid.
    """
    pending = [pid for pid in pids if is_running(pid)]
    for pid in pending:
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while pending and time.monotonic() < deadline:
        time.sleep(0.05)
        pending = [pid for pid in pending if is_running(pid)]
    for pid in pending:
        _signal_group(pid, signal.SIGKILL)
    for pid in pending:
        while is_running(pid):
            time.sleep(0.02)


def log_tail(log: Path, lines: int = 20) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"
