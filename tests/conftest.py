"""Fixtures shared by the whole suite: the real local control plane.

``control_plane`` starts etcd, kube-apiserver, kube-controller-manager and kwok once per
session (the same code as ``kubesalvo cluster up``) and stops them at the end. It starts
with no nodes: add them with ``control_plane.add_nodes(count)``. Nodes are shared by the
session and kept by name (a node that exists is not replaced), so use the default seed
unless a test needs a fleet of its own. ``control_plane.create(objects)`` creates any API
objects concurrently; ``control_plane.call(fn)`` runs ``await fn(client)`` with an
``ApiClient``. ``namespace`` gives each test a fresh namespace, deleted afterwards.

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


def _binaries() -> Path:
    folder = build.bin_dir()
    if build.is_complete(folder):
        return folder
    if shutil.which("go") is None:
        reason = (
            f"the control-plane binaries are not built ({folder}) and `go` is not on PATH "
            "to build them; install Go >= 1.26 or run `kubesalvo cluster build` elsewhere"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    try:
        return build.build()
    except build.BuildError as error:
        pytest.fail(f"kubesalvo cluster build failed: {error}", pytrace=False)


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A running local control plane (no nodes yet), shared by the session."""
    bin_dir = _binaries()
    folder = tmp_path_factory.mktemp("control-plane")
    # Tied to this process, so that a killed session leaves no servers running.
    cp = asyncio.run(controlplane.start(folder, bin_dir, die_with_parent=True))
    try:
        yield cp
    finally:
        controlplane.stop(folder)


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
