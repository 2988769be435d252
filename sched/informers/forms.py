"""One API dict per pod version, for the whole runtime: the pods' memo.

The pod informer decodes every watch event into a new msgspec ``Pod`` and never changes
one it handed out; ``kubesalvo.core`` takes API-shaped dicts. Whoever needs the dict of a
pod version first (the burst cycle, preemption's dry run in its worker thread, the cache
counting a pod bound by someone else, explain, the web view) converts it here, and every
later reader of that version gets the same dict: a pod retried ten times, held as a
nominated pod's reservation and read by preemption is converted once.

A version is the Struct itself (an identity test: the informer's objects are the
versions, and the same resourceVersion decoded twice is two objects to keep alive
anyway). The dicts are shared, so they are read-only for everyone: a reader that needs
another value (the cycle's nomination, preemption's assumed node) makes a shallow copy of
the part it changes (``with_nomination``).

Entries go with their version: the pod informer's handler (``on_pod``) drops a key's
entry when a new version arrives or the pod is deleted, so the memo holds at most one
dict per live pod. Only the version the informer's store holds now is kept as an entry
(``current``). Readers still holding an older object (the queue judging a pod update or
delete against its parked pods, a logged event judged when an attempt comes back, a
decision that took its picture before the event) find it among the last ``RETIRED``
versions: an entry that goes moves there, and an older version converted (``uncached``)
is kept there too, so such a version is converted once for all of them while memory
stays bounded by the live pods plus ``RETIRED`` dicts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Iterable
from typing import Any

from kubesalvo.sched.informers.models import to_api_dict
from kubesalvo.sched.informers.store import DELETED, MODIFIED, SYNCED, Change, object_key

__all__ = ["RETIRED", "PodForms", "with_nomination"]

# Versions no longer current kept by identity: enough for one event judged against every
# parked group and for the events logged during a burst's attempts.
RETIRED = 256


def _key(pod: Any) -> str:
    meta = pod.metadata
    return meta.uid or object_key(pod)


class PodForms:
    """The API dicts of pod versions, each made at most once while it is current.

    ``current(namespace/name)`` gives the informer store's object (``Store.get``); without
    it (a cycle run without informers) every version converted is kept until ``forget``.
    """

    def __init__(
        self,
        convert: Callable[[Any], dict[str, Any]] = to_api_dict,
        current: Callable[[str], Any] | None = None,
    ) -> None:
        self.convert = convert
        self._current = current
        self._dicts: dict[str, tuple[Any, dict[str, Any]]] = {}
        # id(version) -> (version, dict), oldest first; holding the version keeps its id
        # from being reused while it is here.
        self._retired: dict[int, tuple[Any, dict[str, Any]]] = {}
        # Preemption converts in a worker thread: a miss is converted under the lock so
        # that two threads asking for one version make one dict. A hit takes no lock.
        self._lock = threading.Lock()
        self.conversions = 0  # dicts made over the memo's life (the debug page shows it)
        self.uncached = 0  # of which of versions no longer (or not yet) current

    def api(self, pod: Any) -> dict[str, Any]:
        """The API dict of the pod version ``pod`` (read-only: shared by every reader)."""
        entry = self._dicts.get(_key(pod))
        if entry is not None and entry[0] is pod:
            return entry[1]
        entry = self._retired.get(id(pod))
        if entry is not None and entry[0] is pod:
            return entry[1]
        with self._lock:
            key = _key(pod)
            entry = self._dicts.get(key)
            for found in (entry, self._retired.get(id(pod))):
                if found is not None and found[0] is pod:
                    return found[1]
            made = self.convert(pod)
            self.conversions += 1
            if self._current is None or self._current(object_key(pod)) is pod:
                if entry is not None:
                    # the previous version, asked for before the informer's event reached
                    # on_pod: its readers (the queue judging this update) still find it
                    self._retire(*entry)
                self._dicts[key] = (pod, made)
            else:
                self.uncached += 1
                self._retire(pod, made)
            return made

    def of(self, pods: Iterable[Any]) -> list[dict[str, Any]]:
        return [self.api(pod) for pod in pods]

    def on_pod(self, change: Change[Any]) -> None:
        """The pod informer's handler: a new version or a delete ends the old entry."""
        pod = change.obj
        if change.type == SYNCED or pod is None:
            return
        if change.type in (DELETED, MODIFIED):
            key = _key(pod)
            with self._lock:
                entry = self._dicts.get(key)
                if entry is not None and (change.type == DELETED or entry[0] is not pod):
                    del self._dicts[key]
                    self._retire(*entry)

    def _retire(self, pod: Any, made: dict[str, Any]) -> None:
        # under the lock
        self._retired[id(pod)] = (pod, made)
        if len(self._retired) > RETIRED:
            del self._retired[next(iter(self._retired))]

    def forget(self, pod: Any) -> None:
        with self._lock:
            self._dicts.pop(_key(pod), None)

    def keep_only(self, keys: Container[str]) -> None:
        """Drop the entries of pods not in ``keys`` (a cycle's own memo, without the
        informer's deletes: the pods its queue still holds)."""
        with self._lock:
            for key in [key for key in self._dicts if key not in keys]:
                del self._dicts[key]

    def stats(self) -> dict[str, int]:
        return {
            "entries": len(self._dicts),
            "conversions": self.conversions,
            "uncached": self.uncached,
            "retired": len(self._retired),
        }

    def __len__(self) -> int:
        return len(self._dicts)


def with_nomination(pod: dict[str, Any], node: str) -> dict[str, Any]:
    """``pod`` as a reader that knows its nomination sees it: the shared dict itself when
    its ``status.nominatedNodeName`` says ``node`` already (``""``: none), else a shallow
    copy with a new ``status`` (the shared dict is never written)."""
    status = pod.get("status") or {}
    if (status.get("nominatedNodeName") or "") == node:
        return pod
    changed = {k: v for k, v in status.items() if k != "nominatedNodeName"}
    if node:
        changed["nominatedNodeName"] = node
    return {**pod, "status": changed}
