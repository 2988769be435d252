"""Snapshot files: atomic save, load, and errors that name the file."""

from __future__ import annotations

import pytest

from kubesalvo.core.snapshot import Snapshot, SnapshotError
from kubesalvo.core.synthetic import make_nodes, make_pods
from kubesalvo.sched.snapshot.files import load, save


def test_save_then_load_gives_the_same_snapshot(tmp_path):
    original = Snapshot(nodes=make_nodes(20), pods=make_pods(50), created="2026-01-01T00:00:00Z")
    path = tmp_path / "cluster.msgpack"
    save(path, original)
    assert load(path) == original
    assert [p.name for p in tmp_path.iterdir()] == ["cluster.msgpack"]


def test_save_replaces_an_existing_file(tmp_path):
    path = tmp_path / "cluster.msgpack"
    save(path, Snapshot(nodes=make_nodes(3), pods=[]))
    save(path, Snapshot(nodes=make_nodes(5), pods=[]))
    assert len(load(path).nodes) == 5


def test_a_corrupt_file_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "broken.msgpack"
    path.write_bytes(b"\x00not a snapshot")
    with pytest.raises(SnapshotError, match=r"broken.msgpack: not a kubesalvo snapshot"):
        load(path)


def test_a_missing_file_is_refused_naming_the_file(tmp_path):
    with pytest.raises(SnapshotError, match=r"absent.msgpack: cannot read snapshot"):
        load(tmp_path / "absent.msgpack")
