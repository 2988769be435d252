"""Put crictl into the image: the Dockerfile's builder stage runs this (standard library only).

``kubesalvo image-reporter`` lists a node's images with ``crictl images -o json``, so the
image that the DaemonSet of deploy/overlays/image-reporter runs must hold crictl. This
downloads kubernetes-sigs/cri-tools' release archive ``crictl-VERSION-linux-ARCH.tar.gz``,
checks it against a SHA-256 (the one given with ``--sha256``, else the ``.sha256`` file
published beside the archive), and writes the ``crictl`` binary it holds into the target
folder. Any mismatch or failure exits non-zero with one line saying what, so a broken
download fails the image build instead of shipping.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
import tarfile
import urllib.request
from pathlib import Path

RELEASES = "https://github.com/kubernetes-sigs/cri-tools/releases/download"
_TIMEOUT = 120.0


class FetchError(Exception):
    """The archive could not be fetched, did not match, or held no crictl."""


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT) as answer:
            data: bytes = answer.read()
            return data
    except OSError as error:
        raise FetchError(f"{url}: {error}") from None


def archive_name(version: str, arch: str) -> str:
    return f"crictl-{version}-linux-{arch}.tar.gz"


def fetch(version: str, arch: str, dest: Path, sha256: str = "", base: str = RELEASES) -> Path:
    """Download, check and unpack crictl into ``dest``; returns the binary's path."""
    url = f"{base}/{version}/{archive_name(version, arch)}"
    data = _get(url)
    expected = sha256.strip().lower()
    if not expected:
        # The published file holds "<hex>" or "<hex>  <name>".
        published = _get(url + ".sha256").decode("ascii", "replace").split()
        expected = published[0].lower() if published else ""
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise FetchError(f"{url}: SHA-256 {actual} is not the expected {expected or '(none)'}")
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            member = archive.getmember("crictl")
            source = archive.extractfile(member) if member.isfile() else None
            if source is None:
                raise FetchError(f"{url}: its crictl is not a regular file")
            binary = source.read()
    except (tarfile.TarError, KeyError) as error:
        raise FetchError(f"{url}: no crictl in the archive ({error})") from None
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / "crictl"
    target.write_bytes(binary)
    target.chmod(0o755)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True, help="a cri-tools release, e.g. v1.34.0")
    parser.add_argument("--arch", default="amd64", help="amd64, arm64, ...")
    parser.add_argument("--sha256", default="", help="the archive's SHA-256 (default: published)")
    parser.add_argument("--base", default=RELEASES, help="where releases are downloaded from")
    parser.add_argument("dest", type=Path, help="folder to write crictl into")
    args = parser.parse_args(argv)
    try:
        path = fetch(args.version, args.arch, args.dest, args.sha256, args.base)
    except FetchError as error:
        print(f"fetch_crictl: {error}", file=sys.stderr)
        return 1
    print(f"fetch_crictl: {path} from {archive_name(args.version, args.arch)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
