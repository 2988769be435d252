"""Nothing a benchmark or a test starts outlives it.

- A fixture that fails after its control plane and contender started (as the harness
  fixture did when matplotlib was missing) leaves no process: its finalizer, registered
  before the start, stops the control plane, and the harness stops the contender.
- A test run killed with SIGKILL in the middle leaves no process: the kernel kills what it
  started (the parent-death signal).
- ``kubesalvo bench`` stopped by SIGINT or SIGTERM mid-run tears down its contender and
  control plane and exits with 128 + the signal; with ``--keep`` the control plane alone
  stays.

Each runs the real thing in a child process and checks every pid it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesalvo.sched.bench import contenders
from kubesalvo.sched.cluster import controlplane, processes
from kubesalvo.sched.cluster.controlplane import ControlPlane

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# A test module run by a child pytest: its fixture starts a control plane and a raw-bind
# contender through the harness exactly as tests/sched/bench/test_harness.py does, records
# the pids once the contender is ready, then fails ("fail") or waits to be killed ("hang").
CHILD_TESTS = """
import json
import os
import time

import pytest

from kubesalvo.sched.bench import contenders, harness
from kubesalvo.sched.bench.workload import load_scenario
from kubesalvo.sched.cluster import controlplane
from kubesalvo.sched.cluster.controlplane import ControlPlane


@pytest.fixture
def bench(tmp_path, request):
    options = harness.Options(
        scenario=load_scenario("tiny"),
        schedulers=(contenders.RAW_BIND,),
        dir=tmp_path / "control-plane",
        keep=True,
        die_with_parent=True,
    )
    request.addfinalizer(lambda: controlplane.stop(options.dir))

    def say(message):
        if not message.startswith(f"{contenders.RAW_BIND}: ready"):
            return
        pids = ControlPlane.load(options.dir).pids
        with open(os.environ["LEFTOVER_PIDS"], "w") as out:
            json.dump(pids, out)
        if os.environ["LEFTOVER_MODE"] == "hang":
            time.sleep(600)
        raise RuntimeError("the fixture fails after its control plane started")

    harness.run(options, say)


def test_uses_the_failing_fixture(bench):
    pass
"""


def _alive(pids: dict[str, int]) -> dict[str, int]:
    return {name: pid for name, pid in pids.items() if processes.is_running(pid)}


def _wait_all_gone(pids: dict[str, int], timeout: float = 30.0) -> dict[str, int]:
    deadline = time.monotonic() + timeout
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _alive(pids)


@contextlib.contextmanager
def _reaped(pids: dict[str, int]) -> Iterator[None]:
    """Whatever the test finds, it leaves nothing running itself."""
    try:
        yield
    finally:
        for pid in _alive(pids).values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _wait_for(path: Path, child: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert child.poll() is None, log.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
        time.sleep(0.1)
    time.sleep(0.2)  # the writer's json.dump finishes


def _child_pytest(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    (tmp_path / "test_child.py").write_text(CHILD_TESTS)
    pids_file, log = tmp_path / "pids.json", tmp_path / "child.log"
    env = {**os.environ, "LEFTOVER_PIDS": str(pids_file), "LEFTOVER_MODE": mode}
    with log.open("wb") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_child.py"],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return child, pids_file, log


def test_a_fixture_failing_after_its_start_leaves_no_process(tmp_path: Path) -> None:
    child, pids_file, log = _child_pytest(tmp_path, "fail")
    try:
        _wait_for(pids_file, child, log, timeout=300)
        pids = json.loads(pids_file.read_text())
        with _reaped(pids):
            assert set(pids) >= {*controlplane.COMPONENTS, contenders.RAW_BIND}
            assert child.wait(120) == 1, log.read_text()  # pytest: the fixture errored
            assert "the fixture fails after its control plane started" in log.read_text()
            assert _wait_all_gone(pids) == {}
    finally:
        child.kill()
        child.wait()


def test_a_test_run_killed_with_sigkill_leaves_no_process(tmp_path: Path) -> None:
    child, pids_file, log = _child_pytest(tmp_path, "hang")
    try:
        _wait_for(pids_file, child, log, timeout=300)
        pids = json.loads(pids_file.read_text())
        with _reaped(pids):
            assert _alive(pids) == pids  # all running while the fixture waits
            child.send_signal(signal.SIGKILL)  # no finalizer runs
            child.wait(30)
            assert _wait_all_gone(pids) == {}
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize(
    ("signum", "keep"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGTERM, True)],
    ids=["sigint", "sigterm", "sigterm-keep"],
)
def test_a_signalled_bench_tears_down_its_contender_and_control_plane(
    tmp_path: Path, signum: signal.Signals, keep: bool
) -> None:
    out = tmp_path / "out"
    cp_dir = out / "control-plane"
    log = tmp_path / "bench.log"
    # One node for 400 pods: most stay pending, so the run is still going when signalled.
    argv = [
        sys.executable,
        "-m",
        "kubesalvo.sched.cli",
        "bench",
        "--workload=tiny",
        "--nodes=1",
        "--pods=400",
        f"--schedulers={contenders.KUBESALVO}",
        f"--out={out}",
        "--settle=600",
        *(["--keep"] if keep else []),
    ]
    with log.open("wb") as sink:
        child = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT)
    pids: dict[str, int] = {}
    try:
        deadline = time.monotonic() + 300
        while contenders.KUBESALVO not in pids:
            assert child.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            with contextlib.suppress(FileNotFoundError, json.JSONDecodeError, KeyError):
                pids = dict(ControlPlane.load(cp_dir).pids)
            time.sleep(0.1)
        with _reaped(pids):
            child.send_signal(signum)
            assert child.wait(120) == 128 + signum, log.read_text()
            text = log.read_text()
            assert f"{signal.Signals(signum).name}: run stopped" in text
            assert not processes.is_running(pids[contenders.KUBESALVO])
            core = {name: pid for name, pid in pids.items() if name in controlplane.COMPONENTS}
            if keep:
                assert _alive(core) == core, text
                assert "control plane kept" in text
                controlplane.stop(cp_dir)
            else:
                assert not (cp_dir / controlplane.STATE_FILE).exists()
            assert _wait_all_gone(pids) == {}
    finally:
        child.kill()
        child.wait()
        if keep:
            controlplane.stop(cp_dir)
