"""The speed suites of bench/ run, unmeasured, in the default test run: every benchmark is
called once (``--benchmark-disable``) and its own checks hold, so that a suite broken by a
change shows here and not only when someone next measures. Their figures come from the
measured runs (bench/README.md); no timing is asserted here. The 50,000-node case
(``slow`` within bench/) is left to those runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_the_bench_suites_run_once_each_and_pass(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "bench",
        "-m",
        "not slow",
        "--benchmark-disable",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={tmp_path / 'bench.xml'}",
    ]
    done = subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, timeout=900, env={**os.environ}
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = (tmp_path / "bench.xml").read_text()
    assert 'skipped="0"' in report and 'failures="0"' in report and 'errors="0"' in report
