"""Reading and writing snapshot files; the format itself is ``kubesalvo.core.snapshot``."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kubesalvo.core.snapshot import Snapshot, SnapshotError, dumps, loads


def save(path: str | os.PathLike[str], snapshot: Snapshot) -> None:
    """Write atomically: a reader never sees half a snapshot, even if we are killed."""
    target = Path(path)
    data = dumps(snapshot)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load(path: str | os.PathLike[str]) -> Snapshot:
    """Read a snapshot file; a bad file raises ``SnapshotError`` naming the file."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise SnapshotError(f"{path}: cannot read snapshot: {error.strerror or error}") from error
    try:
        return loads(data)
    except SnapshotError as error:
        raise SnapshotError(f"{path}: {error}") from error
