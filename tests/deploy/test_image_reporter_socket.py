"""The image reporter's pod security against a socket owned as the runtime's is.

containerd's and CRI-O's CRI sockets are root:root, mode 0660. The DaemonSet runs the
reporter as uid 65532 with the socket's group as a supplementary group: a process with
exactly the user, group and supplementary groups of its securityContext connects to such a
socket, and the same user without that group is refused. Needs root to create the socket
as root's and to start a process as another user; skipped otherwise.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.deploy import DEPLOY, find, render

pytestmark = pytest.mark.integration

CONNECT = "import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])"


@pytest.fixture
def root_socket() -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root: to own a socket as root and run a process as uid 65532")
    # Not under pytest's tmp_path, whose parents only root may enter.
    folder = Path(tempfile.mkdtemp(prefix="kubesalvo-socket-"))
    folder.chmod(0o755)
    path = folder / "containerd.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        server.listen(4)
        os.chown(path, 0, 0)
        path.chmod(0o660)
        yield path
    finally:
        server.close()
        shutil.rmtree(folder)


def python_for_anyone() -> str:
    """A Python another user may run (this venv's may sit under root's home)."""
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        if all(os.stat(p).st_mode & 0o001 for p in _parents(Path(candidate).resolve())):
            return candidate
    pytest.skip("no Python that uid 65532 may run")


def _parents(path: Path) -> list[Path]:
    return [path, *path.parents]


def connects(path: Path, user: int, group: int, groups: list[int]) -> bool:
    done = subprocess.run(
        [python_for_anyone(), "-c", CONNECT, str(path)],
        user=user,
        group=group,
        extra_groups=groups,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        assert "PermissionError" in done.stderr, done.stderr
    return done.returncode == 0


def test_the_daemonsets_user_and_groups_reach_a_root_owned_runtime_socket(
    control_plane, root_socket
):
    rendered = render(control_plane, DEPLOY / "overlays" / "image-reporter")
    daemonset = find(rendered, "DaemonSet", "kubesalvo-image-reporter")
    security = daemonset["spec"]["template"]["spec"]["securityContext"]
    user, group = security["runAsUser"], security["runAsGroup"]
    assert user != 0 and group != 0
    assert connects(root_socket, user, group, security["supplementalGroups"])
    assert not connects(root_socket, user, group, [])
