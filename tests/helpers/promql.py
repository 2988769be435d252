"""Prometheus' own PromQL parser for the chart's tests: ``promql-check EXPR...``.

Built on first use from the Go module in ``tests/helpers/promql/`` (it pins
github.com/prometheus/prometheus; only its promql/parser package is compiled) into
``<cache>/bin/promql-check-<version>/``, written atomically. Without Go and without a
cached build the tests that need it skip, saying so; under CI=true that is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kubesalvo.sched.cluster import build

MODULE = Path(__file__).parent / "promql"
PROMETHEUS = "github.com/prometheus/prometheus"


def binary() -> Path:
    version = build.module_version((MODULE / "go.mod").read_text(), PROMETHEUS)
    return build.cache_root() / "bin" / f"promql-check-{version}" / "promql-check"


def checker() -> Path:
    """The checker's path, built if missing."""
    target = binary()
    if target.is_file():
        return target
    if shutil.which("go") is None:
        reason = f"the PromQL checker is not built ({target}) and `go` is not on PATH"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)

    def fill(staging: Path) -> None:
        step = build.Step(
            "promql-check",
            [build.find_go(), "build", "-o", str(staging / target.name), "."],
            MODULE,
            {"GOFLAGS": "-mod=readonly -buildvcs=false -trimpath"},
        )
        done = subprocess.run(
            step.argv, cwd=step.cwd, env={**os.environ, **step.env},
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            pytest.fail(build.explain_failure(step, done.stdout + done.stderr), pytrace=False)

    build.install_folder(target.parent, fill, lambda folder: (folder / target.name).is_file())
    return target


def parse_errors(expressions: list[str]) -> str:
    """What Prometheus' parser says about the expressions that do not parse ("" if all do)."""
    done = subprocess.run(
        [str(checker()), *expressions], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout
