"""The local copy of one resource, and the changes that keep it equal to the API server's.

The store turns the stream's items into ``Change``s exactly once each: a watch event whose
resourceVersion the store already holds (a re-delivered event after a reconnect) changes
nothing, a DELETED for an object it never had is dropped, and a relist is diffed against
the store so that objects that vanished while the watch was down come out as DELETED and
objects that changed come out as MODIFIED. An object recreated under the same name (a new
UID) is reported as a DELETED of the old one followed by an ADDED of the new one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

ADDED: Literal["ADDED"] = "ADDED"
MODIFIED: Literal["MODIFIED"] = "MODIFIED"
DELETED: Literal["DELETED"] = "DELETED"
SYNCED: Literal["SYNCED"] = "SYNCED"

ChangeType = Literal["ADDED", "MODIFIED", "DELETED", "SYNCED"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Change(Generic[T]):
    """What the handler receives.

    ``obj`` is the new state (ADDED, MODIFIED) or the last known state (DELETED); ``old``
    is the previous state for MODIFIED. SYNCED carries no object: it says the store now
    reflects a complete list (sent after the first list and after every relist).
    """

    type: ChangeType
    obj: T | None = None
    old: T | None = None


def object_key(obj: object) -> str:
    """``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones."""
    meta = obj.metadata  # type: ignore[attr-defined]
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


class Store(Generic[T]):
    """Objects by key, updated only through ``apply_event`` and ``replace``."""

    def __init__(self) -> None:
        self._objects: dict[str, T] = {}

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    def get(self, key: str) -> T | None:
        return self._objects.get(key)

    def values(self) -> Iterable[T]:
        return self._objects.values()

    def keys(self) -> Iterable[str]:
        return self._objects.keys()

    def apply_event(self, kind: str, obj: T) -> list[Change[T]]:
        """Apply one watch event; return the changes it made (none if already applied)."""
        key = object_key(obj)
        meta = obj.metadata  # type: ignore[attr-defined]
        current = self._objects.get(key)
        if kind == DELETED:
            if current is None or _uid(current) != meta.uid:
                return []
            del self._objects[key]
            return [Change(DELETED, obj)]
        self._objects[key] = obj
        if current is None:
            return [Change(ADDED, obj)]
        if _uid(current) != meta.uid:
            # The old object's DELETED was missed (it happened while we relisted).
            return [Change(DELETED, current), Change(ADDED, obj)]
        if _rv(current) == meta.resource_version:
            return []
        return [Change(MODIFIED, obj, current)]

    def replace(self, items: Iterable[T]) -> list[Change[T]]:
        """Make the store equal to a fresh list; return the difference, then SYNCED."""
        fresh: dict[str, T] = {object_key(item): item for item in items}
        changes: list[Change[T]] = [
            Change(DELETED, self._objects.pop(key))
            for key in [key for key in self._objects if key not in fresh]
        ]
        for key, obj in fresh.items():
            current = self._objects.get(key)
            self._objects[key] = obj
            if current is None:
                changes.append(Change(ADDED, obj))
            elif _uid(current) != _uid(obj):
                changes += [Change(DELETED, current), Change(ADDED, obj)]
            elif _rv(current) != _rv(obj):
                changes.append(Change(MODIFIED, obj, current))
        changes.append(Change(SYNCED))
        return changes


def _uid(obj: object) -> str:
    return obj.metadata.uid  # type: ignore[attr-defined]


def _rv(obj: object) -> str:
    return obj.metadata.resource_version  # type: ignore[attr-defined]
