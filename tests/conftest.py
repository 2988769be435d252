"""Fixtures shared by the whole suite: the real local control plane.

``control_plane`` starts etcd, kube-apiserver, kube-controller-manager and kwok once per
session (the same code as ``kubesalvo cluster up``) and stops them at the end. It starts
with no nodes: add them with ``control_plane.add_nodes(count)``. Nodes are shared by the
session and kept by name (a node that exists is not replaced), so use the default seed
unless a test needs a fleet of its own. ``control_plane.create(objects)`` creates any API
objects concurrently; ``control_plane.call(fn)`` runs ``await fn(client)`` with an
``ApiClient``. ``namespace`` gives each test a fresh namespace, deleted afterwards.

Its Kubernetes release is the default one unless ``--kubernetes VERSION`` (or the
environment variable ``KUBESALVO_TEST_KUBERNETES``) names another shipped release: the
integration suite runs unchanged on each. ``newest_control_plane`` is the newest shipped
release (the benchmarks' baseline), for the few core tests the default suite runs on it
too; it is ``control_plane`` itself when that already is the newest.

Missing binaries are built when ``go`` is on PATH. Without Go the integration tests are
skipped, except under CI=true, where that is a failure.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesalvo.sched.cluster import ApiClient, ApiError, build, controlplane
from kubesalvo.sched.cluster.controlplane import ControlPlane


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--kubernetes",
        metavar="VERSION",
        default=os.environ.get("KUBESALVO_TEST_KUBERNETES") or None,
        help="the Kubernetes release of the control_plane fixture (default: the default "
        "shipped one; env KUBESALVO_TEST_KUBERNETES)",
    )


def _release(config: pytest.Config) -> str:
    """The release ``--kubernetes`` names (the default one when not given)."""
    try:
        return build.shipped_versions(kubernetes=config.getoption("--kubernetes")).kubernetes
    except build.BuildError as error:
        raise pytest.UsageError(str(error)) from error


def _binaries(kubernetes: str | None = None) -> Path:
    folder = build.bin_dir(build.shipped_versions(kubernetes=kubernetes))
    if build.is_complete(folder):
        return folder
    if shutil.which("go") is None:
        reason = (
            f"the control-plane binaries are not built ({folder}) and `go` is not on PATH "
            "to build them; install Go >= 1.26 or run `kubesalvo cluster build "
            f"--kubernetes {kubernetes or 'VERSION'}` elsewhere"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    try:
        return build.build(kubernetes=kubernetes)
    except build.BuildError as error:
        pytest.fail(f"kubesalvo cluster build failed: {error}", pytrace=False)


def _running(tmp_path_factory: pytest.TempPathFactory, kubernetes: str) -> Iterator[ControlPlane]:
    bin_dir = _binaries(kubernetes)
    folder = tmp_path_factory.mktemp(f"control-plane-{kubernetes}")
    # Tied to this process, so that a killed session leaves no servers running.
    cp = asyncio.run(controlplane.start(folder, bin_dir, die_with_parent=True))
    try:
        yield cp
    finally:
        controlplane.stop(folder)


@pytest.fixture(scope="session")
def control_plane(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[ControlPlane]:
    """A running local control plane (no nodes yet), shared by the session."""
    yield from _running(tmp_path_factory, _release(pytestconfig))


@pytest.fixture(scope="session")
def newest_control_plane(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[ControlPlane]:
    """A running control plane of the newest shipped Kubernetes release (no nodes yet)."""
    newest = newest_release()
    if _release(request.config) == newest:
        yield request.getfixturevalue("control_plane")
        return
    yield from _running(tmp_path_factory, newest)


def newest_release() -> str:
    """The newest Kubernetes release a shipped module pins."""
    return max(build.kubernetes_modules(), key=lambda v: tuple(map(int, v[1:].split("."))))


@pytest.fixture
def namespace(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace named after the test, deleted (without waiting) afterwards."""
    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{stem}-{secrets.token_hex(3)}"
    control_plane.create([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}])
    try:
        yield name
    finally:

        async def delete(client: ApiClient) -> None:
            try:
                await client.request("DELETE", f"/api/v1/namespaces/{name}")
            except ApiError as error:
                if error.status != 404:
                    raise

        control_plane.call(delete)
