"""What the queueing hints (``*_hint.py`` beside each plugin's module) derive from objects,
cached by the object's identity.

One node event is asked about every parked pod, so what a hint derives from an object
(API dict, parsed requests, allocatable, selectors) is remembered for the last objects
seen. That relies on the informers' objects never being changed in place: an update
brings a new object. The hints take the informers' typed models or API dicts alike.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import msgspec

from kubesalvo.core.pernode.snapshot import NodeInfo

__all__ = ["ByIdentity", "api", "node_info", "spec_of", "to_api"]

T = TypeVar("T")


class ByIdentity(Generic[T]):
    """``fn(obj)`` remembered for the last ``size`` objects, keyed by identity.

    The cache keeps each object alive while it holds its value, so an id is never
    reused for another object while it is cached.
    """

    def __init__(self, fn: Callable[[Any], T], size: int) -> None:
        self._fn = fn
        self._size = size
        self._values: OrderedDict[int, tuple[Any, T]] = OrderedDict()

    def __call__(self, obj: Any) -> T:
        hit = self._values.get(id(obj))
        if hit is not None and hit[0] is obj:
            self._values.move_to_end(id(obj))
            return hit[1]
        value = self._fn(obj)
        self._values[id(obj)] = (obj, value)
        if len(self._values) > self._size:
            self._values.popitem(last=False)
        return value


def to_api(obj: Any) -> Mapping[str, Any]:
    """An informer model as its API dict (an API dict as it is)."""
    return obj if isinstance(obj, Mapping) else msgspec.to_builtins(obj)


api = ByIdentity(to_api, 4096)
node_info = ByIdentity(lambda node: NodeInfo.of(to_api(node)), 256)


def spec_of(obj: Any) -> Mapping[str, Any]:
    found: Mapping[str, Any] = api(obj).get("spec") or {}
    return found
