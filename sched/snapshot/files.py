"""Reading and writing snapshot files; the format itself is ``kubesalvo.core.snapshot``.

A file is untrusted input: besides the format's own checks, every node, pod and namespace
must have the types the API server guarantees for what the watch delivers (the typed
views of ``informers.models``), so that a hand-edited or corrupt file is refused with the
object and field at fault instead of failing deep inside the kernels' encoding.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import msgspec

from kubesalvo.core.snapshot import Snapshot, SnapshotError, dumps, loads
from kubesalvo.sched.informers.models import Namespace, Node, Pod

_TYPED = (("nodes", Node), ("pods", Pod), ("namespaces", Namespace))


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
        snapshot = loads(data)
        check_types(snapshot)
    except SnapshotError as error:
        raise SnapshotError(f"{path}: {error}") from error
    return snapshot


def check_types(snapshot: Snapshot) -> None:
    """Refuse an object whose fields do not have the API's types (``SnapshotError``)."""
    for kind, struct in _TYPED:
        for index, obj in enumerate(getattr(snapshot, kind)):
            try:
                msgspec.convert(obj, struct)
            except msgspec.ValidationError as error:
                where = str(error).replace("`$", f"`{kind}[{index}]", 1)
                raise SnapshotError(f"not an API object: {where}") from error
