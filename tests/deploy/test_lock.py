"""deploy/requirements.lock, from which deploy/Dockerfile installs the image's dependencies.

Every dependency of pyproject.toml is pinned there (``==``) at a version its specifier
accepts, every pin carries hashes, and the lock installs into a fresh virtual environment
with ``pip install --require-hashes`` (pip refuses a file whose hash is not listed, and any
requirement left unpinned), after which ``pip check`` finds every dependency satisfied;
and pip finds a hashed CPython 3.12 manylinux wheel of every pin, what the image's Python
installs.
Not proven here: the image build itself (no Docker engine), and the build stage's own
build requirements (setuptools, Cython, numpy for ``pip wheel``), which stay out of the
runtime image.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "deploy" / "requirements.lock"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)")


def pins() -> dict[str, str]:
    found = {}
    for line in LOCK.read_text().splitlines():
        match = PIN.match(line)
        if match:
            found[canonicalize_name(match[1])] = match[2]
    return found


def test_every_dependency_of_pyproject_is_pinned_at_a_version_it_accepts():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = pins()
    for text in declared:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is not in deploy/requirements.lock"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"{name}=={pinned[name]} is outside {requirement.specifier}"
        )


def test_every_pin_carries_a_hash():
    blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text())
    for block in blocks:
        if PIN.match(block):
            assert "--hash=sha256:" in block, block.splitlines()[0]
    assert pins()


def test_the_lock_installs_in_a_fresh_venv_with_require_hashes(tmp_path):
    venv.create(tmp_path / "env", with_pip=True)
    python = str(tmp_path / "env" / "bin" / "python")
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    install = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--require-hashes", "-r", str(LOCK)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if install.returncode and "Could not find a version" in install.stderr + install.stdout:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the package index is unreachable: {install.stderr[-2000:]}")
        pytest.skip("the package index is unreachable from here")
    assert install.returncode == 0, install.stderr[-4000:]
    check = subprocess.run(
        [python, "-m", "pip", "check"], capture_output=True, text=True, env=env, timeout=120
    )
    assert check.returncode == 0, check.stdout


def test_the_dockerfile_installs_dependencies_only_from_the_lock():
    runs = [
        line.strip(" \\&")
        for line in (ROOT / "deploy" / "Dockerfile").read_text().splitlines()
        if "pip install" in line
    ]
    assert "/opt/kubesalvo/bin/pip install --require-hashes -r deploy/requirements.lock" in runs
    for run in runs:
        assert "--require-hashes" in run or "--no-deps" in run, run


def test_the_lock_has_hashed_wheels_for_the_images_python(tmp_path):
    # The image's Python (3.12 on Debian bookworm, glibc 2.36) may differ from the one
    # running the tests: pip fetches what that interpreter would install, hashes checked.
    platforms = [f"--platform={tag}_x86_64" for tag in ("manylinux2014", "manylinux_2_28")]
    download = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--python-version",
            "3.12",
            *platforms,
            "--only-binary=:all:",
            "--require-hashes",
            "-r",
            str(LOCK),
            "-d",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        timeout=900,
    )
    assert download.returncode == 0, download.stderr[-4000:]
    assert len(list(tmp_path.glob("*.whl"))) == len(pins())
