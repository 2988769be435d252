"""deploy/fetch_crictl.py, which puts crictl into the image, run as the Dockerfile runs it,
against a local HTTP server laid out as cri-tools' release downloads (GitHub is not
reachable here): the archive is checked against the published or the given SHA-256, and
every failure is exit 1 with one line, never a traceback or a partial binary."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.deploy import DEPLOY

VERSION = "v1.34.0"
NAME = f"crictl-{VERSION}-linux-amd64.tar.gz"
SCRIPT = b"#!/bin/sh\necho 'crictl version v1.34.0'\n"


def archive(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def releases(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A release folder served on a free loopback port: (base URL, folder of VERSION)."""
    root = tmp_path / "releases"
    folder = root / VERSION
    folder.mkdir(parents=True)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()


def publish(folder: Path, data: bytes, checksum: str | None = None) -> str:
    digest = hashlib.sha256(data).hexdigest()
    (folder / NAME).write_bytes(data)
    (folder / f"{NAME}.sha256").write_text(f"{checksum or digest}  {NAME}\n")
    return digest


def fetch(base: str, dest: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DEPLOY / "fetch_crictl.py"), "--version", VERSION,
         "--arch", "amd64", "--base", base, *extra, str(dest)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_crictl_checked_against_the_published_sha256_lands_executable(
    releases: tuple[str, Path], tmp_path: Path
) -> None:
    base, folder = releases
    publish(folder, archive({"crictl": SCRIPT}))
    done = fetch(base, tmp_path / "bin")
    assert done.returncode == 0, done.stderr
    crictl = tmp_path / "bin" / "crictl"
    assert subprocess.run([str(crictl)], capture_output=True, text=True).stdout.strip() == (
        "crictl version v1.34.0"
    )


def test_a_given_sha256_is_used_instead_of_the_published_one(
    releases: tuple[str, Path], tmp_path: Path
) -> None:
    base, folder = releases
    digest = publish(folder, archive({"crictl": SCRIPT}), checksum="0" * 64)
    assert fetch(base, tmp_path / "a", "--sha256", digest).returncode == 0
    done = fetch(base, tmp_path / "b", "--sha256", "f" * 64)
    assert done.returncode == 1 and "is not the expected " + "f" * 64 in done.stderr


@pytest.mark.parametrize(
    ("members", "checksum", "said"),
    [
        ({"crictl": SCRIPT}, "1" * 64, "is not the expected"),
        ({"README.md": b"no binary"}, None, "no crictl in the archive"),
        (None, None, "404"),
    ],
)
def test_a_bad_download_fails_the_build_with_one_line(
    releases: tuple[str, Path],
    tmp_path: Path,
    members: dict[str, bytes] | None,
    checksum: str | None,
    said: str,
) -> None:
    base, folder = releases
    if members is not None:
        publish(folder, archive(members), checksum)
    done = fetch(base, tmp_path / "bin")
    assert done.returncode == 1
    assert said in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "bin" / "crictl").exists()
