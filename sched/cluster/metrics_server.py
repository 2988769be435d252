"""Builds metrics-server (for the extender's ``safe`` agent) into its own versioned cache.

The Go module in ``deploy/local/metrics-server`` pins ``sigs.k8s.io/metrics-server``; the
binary goes to ``<cache>/bin/metrics-server-<version>/metrics-server``, written
atomically (built in a temporary folder, then renamed), so the control plane's build and
cache folder are never touched and each version builds once per machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from kubesalvo.sched.cluster.build import (
    BuildError,
    Step,
    cache_root,
    explain_failure,
    find_go,
    module_version,
    source_dir,
)

__all__ = ["MODULE", "binary", "build", "module_dir", "version"]

MODULE = "sigs.k8s.io/metrics-server"
COMMAND = f"{MODULE}/cmd/metrics-server"


def module_dir() -> Path:
    return source_dir() / "metrics-server"


def version() -> str:
    return module_version((module_dir() / "go.mod").read_text(), MODULE)


def binary(root: Path | None = None) -> Path:
    """Where the binary of the pinned version lives (built or not)."""
    return (root or cache_root()) / "bin" / f"metrics-server-{version()}" / "metrics-server"


def build(force: bool = False) -> Path:
    """Builds metrics-server unless its cache folder holds it; returns the binary's path."""
    target = binary()
    if target.is_file() and not force:
        return target
    go = find_go()
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.parent.name}-", dir=target.parent.parent))
    try:
        with tempfile.TemporaryDirectory(prefix="kubesalvo-go-") as tmp:
            module = Path(tmp) / "metrics-server"
            shutil.copytree(module_dir(), module)
            step = Step(
                f"metrics-server {version()}",
                [go, "build", "-ldflags", "-s -w", "-o", str(staging / "metrics-server"), COMMAND],
                module,
                {"GOFLAGS": "-buildvcs=false"},
            )
            env = {**os.environ, **step.env}
            done = subprocess.run(
                step.argv, cwd=step.cwd, env=env, capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise BuildError(explain_failure(step, done.stdout + done.stderr))
        if target.parent.exists():
            shutil.rmtree(target.parent)
        try:
            os.rename(staging, target.parent)
        except OSError:
            if not target.is_file():  # another build that finished first is as good
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
