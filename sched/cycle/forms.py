"""One API dict per pod version: the burst cycle's conversions of queued pods.

The queue holds the informer's decoded Pod (a msgspec Struct); ``kubesalvo.core`` takes
API-shaped dicts. Before this, every attempt converted its pods again, every burst
converted every nominated pod outside it again (its reservation), and a pod with claims
was converted once more to ask whether it belongs to a gang: a pod retried ten times was
converted at least ten times for one version of it. Here the dict of a pod is made once
per object version and kept while the pod may be placed again.

A version is the Struct itself: the informer decodes a new object for every watch event
and never changes one it handed out, so the same object means the same version (an
identity test, cheaper than comparing resourceVersions and right for objects without
one). The dicts are shared with ``kubesalvo.core``, which only reads them; the cycle's
one write (``status.nominatedNodeName``, set from the queue's nomination before every
placement) is idempotent. Entries of pods no longer in the queue are dropped by
``keep_only`` (called from the cycle's housekeeping), so the memo never outgrows the
queue.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any

from kubesalvo.sched.informers import to_api_dict

__all__ = ["PodForms"]


class PodForms:
    """The API dicts of the queue's pods, one per object version."""

    def __init__(self, convert: Callable[[Any], dict[str, Any]] = to_api_dict) -> None:
        self._convert = convert
        self._dicts: dict[str, tuple[Any, dict[str, Any]]] = {}
        # Conversions made over the memo's life (tests count them; /debug could show it).
        self.conversions = 0

    def api(self, key: str, pod: Any) -> dict[str, Any]:
        """The API dict of ``pod`` (the queue's object for ``key``), made at most once per
        version."""
        entry = self._dicts.get(key)
        if entry is not None and entry[0] is pod:
            return entry[1]
        made = self._convert(pod)
        self.conversions += 1
        self._dicts[key] = (pod, made)
        return made

    def forget(self, key: str) -> None:
        self._dicts.pop(key, None)

    def keep_only(self, keys: Container[str]) -> None:
        """Drop the entries of pods not in ``keys`` (the ones the queue still holds)."""
        gone = [key for key in self._dicts if key not in keys]
        for key in gone:
            del self._dicts[key]

    def __len__(self) -> int:
        return len(self._dicts)
