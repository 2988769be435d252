"""helm for the chart's tests: built on first use (``build.build_helm``, through the Go
module proxy, cached per version), run with a values file, its output read as objects.

Without Go and without a cached helm the chart's tests skip, saying so; under CI=true
that is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesalvo.sched.cluster import build
from tests.helpers.deploy import DEPLOY

CHART = DEPLOY / "chart"


def helm_binary() -> Path:
    """helm of ``build.HELM_VERSION``, built if missing."""
    target = build.helm_binary()
    if target.is_file():
        return target
    if shutil.which("go") is None:
        reason = (
            f"helm is not built ({target}) and `go` is not on PATH to build it "
            "(go install helm.sh/helm/v4/cmd/helm); install Go >= 1.26"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    try:
        return build.build_helm()
    except build.BuildError as error:
        pytest.fail(f"building helm failed: {error}", pytrace=False)


def run_helm(helm: Path, *args: str, values: dict[str, Any] | None = None) -> str:
    """``helm ARGS [-f values]``; AssertionError with helm's output when it fails."""
    with tempfile.TemporaryDirectory(prefix="kubesalvo-helm-") as tmp:
        argv = [str(helm), *args]
        if values:
            path = Path(tmp) / "values.yaml"
            path.write_text(yaml.safe_dump(values))
            argv += ["-f", str(path)]
        # helm keeps its caches and its repository list under these; none of the user's.
        env = {
            **os.environ,
            "HELM_CACHE_HOME": f"{tmp}/cache",
            "HELM_CONFIG_HOME": f"{tmp}/config",
            "HELM_DATA_HOME": f"{tmp}/data",
        }
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    if done.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{done.stderr}{done.stdout}")
    return done.stdout


def template(helm: Path, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The objects ``helm template kubesalvo deploy/chart`` renders with ``values``."""
    text = run_helm(helm, "template", "kubesalvo", str(CHART), values=values)
    return [doc for doc in yaml.safe_load_all(text) if doc]
