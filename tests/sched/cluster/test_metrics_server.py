"""metrics-server's build: its own Go module and its own cache folder keyed by version."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kubesalvo.sched.cluster import build, metrics_server


def test_the_module_pins_a_release_and_the_cache_folder_is_keyed_by_it(tmp_path):
    version = metrics_server.version()
    assert version.startswith("v0.")
    path = metrics_server.binary(tmp_path)
    assert path == tmp_path / "bin" / f"metrics-server-{version}" / "metrics-server"
    # Never the control plane's folder.
    assert path.parent != build.bin_dir(root=tmp_path)


@pytest.mark.slow
def test_the_build_gives_a_working_binary():
    if shutil.which("go") is None and not metrics_server.binary().is_file():
        pytest.skip("metrics-server is not built and `go` is not on PATH to build it")
    binary = metrics_server.build()
    done = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60)
    assert "--kubelet-preferred-address-types" in done.stdout + done.stderr
