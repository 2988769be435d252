"""Per-class node tables kept across bursts while the nodes stay the same (issue 33).

A scheduler under a steady rate places thousands of small bursts of the same few classes
onto the same nodes. Each burst's Encoder (core/encode.py) built each class afresh (its
requests, keys, PreFilter outcome) and its static rows (the static filters' reasons, the
fixed score, the normalised channels' raw values, the filter masks, the numeric labels,
the required-affinity rows): every one of them a function of the nodes, the profile and
the class's key alone, yet rebuilt over every row for every burst. ``tables_for`` hands
the encoders of one state and one profile the same ``NodeTables`` for as long as
``state.version`` (bumped on every node added, removed or updated: labels, taints,
allocatable, images) and the profile stay the same, so a burst builds only the classes
and rows no burst before it built.

What is kept is only what depends on nothing but the nodes, the profile and the key it is
filed under (encode.py decides per class, ``Encoder._shared`` and ``_keep_class``): not a
class with volumes or claims, nor the rows of a class whose class filters answered (they
read the storage objects, which pods change), nor of the one pod placed with its devices
(DynamicResources' Filter answer and its Score read them). A version change gives new
tables, never clears the old ones in place, so an encoder still holding them (another
thread's) sees no rows of another version. Each table is emptied when it holds more than
``_CELLS`` cells, at the start of a burst; a burst with more new classes than that keeps
none of them (a burst of one-pod classes would fill the table only to have it emptied).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core.profile import Profile
from kubesalvo.core.state import ClusterState

__all__ = ["ENABLED", "NodeTables", "limit", "tables_for"]

# False: every call gets tables of its own (the cost before this module; tests and
# bench/steady_bursts.py compare the two).
ENABLED = True
# Cells (entries x rows) a table may hold before it is emptied: ~5,000 static rows at
# 5,000 nodes, a few tens of MB over all tables.
_CELLS = 25_000_000
# Profiles whose tables a state keeps (a profile object per scheduler profile).
_PROFILES = 8


@dataclass
class NodeTables:
    """The rows of one state version under one profile, by the key encode.py files them."""

    version: int
    static: dict[bytes, Any] = field(default_factory=dict)
    taint: dict[bytes, Any] = field(default_factory=dict)
    aff: dict[bytes, Any] = field(default_factory=dict)
    fixed: dict[bytes, Any] = field(default_factory=dict)
    numeric: dict[str, Any] = field(default_factory=dict)
    affinity_rows: dict[bytes, Any] = field(default_factory=dict)
    # per filter mask of the profile (in the encoder's order), its rows by key
    masks: dict[tuple[str, int], dict[bytes, Any]] = field(default_factory=dict)
    # per extra channel (by its index), its rows by key
    extras: dict[int, dict[bytes, Any]] = field(default_factory=dict)
    # completed classes (encode.ClassInfo) by their key, without pods
    classes: dict[bytes, Any] = field(default_factory=dict)
    # per static row of ``static`` (by its id), the row and the rows passing it
    passing: dict[int, Any] = field(default_factory=dict)

    def trim(self, rows: int) -> None:
        most = limit(rows)
        tables: list[dict[Any, Any]] = [self.static, self.taint, self.aff, self.fixed]
        tables += [self.affinity_rows, self.classes, self.passing]
        for table in [*tables, *self.masks.values(), *self.extras.values()]:
            if len(table) > most:
                table.clear()


def limit(rows: int) -> int:
    """The entries a table may hold at ``rows`` rows before ``trim`` empties it."""
    return max(64, _CELLS // max(1, rows))


# state -> [(profile, its tables)], most recently used last
_by_state: weakref.WeakKeyDictionary[ClusterState, list[tuple[Profile, NodeTables]]] = (
    weakref.WeakKeyDictionary()
)
# The runtime places a burst in a worker thread while preemption may plan in another.
_lock = threading.Lock()


def tables_for(state: ClusterState, profile: Profile) -> NodeTables:
    """The tables of the state's current version under ``profile`` (the same object while
    neither changes, for an equal profile too; new, empty ones after a change or with
    ``ENABLED`` False)."""
    version = state.version
    if not ENABLED:
        return NodeTables(version)
    with _lock:
        return _tables_for(state, profile, version)


def _tables_for(state: ClusterState, profile: Profile, version: int) -> NodeTables:
    kept = _by_state.get(state)
    if kept is None:
        kept = _by_state[state] = []
    for i, (known, tables) in enumerate(kept):
        # A profile equal to a known one (Profile.default() called again, BurstPacking's
        # plain copy) has the same tables.
        if known is profile or known == profile:
            if tables.version == version:
                tables.trim(state.rows)
                return tables
            del kept[i]
            break
    tables = NodeTables(version)
    kept.append((profile, tables))
    if len(kept) > _PROFILES:
        del kept[0]
    return tables
