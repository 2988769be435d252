"""What the queueing hints (``*_hint.py`` beside each plugin's module) derive from objects.

The hints take the informers' typed models or API dicts alike. A pod's API dict comes from
the runtime's pod memo (sched/informers/forms.py) when the queue asking names it
(``pod_forms``), so that a pod version is converted once in the whole runtime, queue
included; without one (a hint asked on its own) the pod is converted here, each time.
One node event is asked about every parked pod, so what a hint derives from a node
(``node_info``) is remembered for the last nodes seen, by identity. That relies on the
informers' objects never being changed in place: an update brings a new object.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

import msgspec

from kubesalvo.core.pernode.snapshot import NodeInfo

__all__ = ["ByIdentity", "PodForm", "api", "node_info", "pod_forms", "spec_of", "to_api"]

T = TypeVar("T")

PodForm = Callable[[Any], Mapping[str, Any]]

# The asking queue's converter of pods. A context variable, not an argument, because the
# hints' signature is the plugins' (pod, event, old, new) and most hints never convert;
# it is per thread and per task, so queues of two schedulers in one process stay apart.
_POD_FORM: ContextVar[PodForm | None] = ContextVar("hint_pod_form", default=None)


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


class pod_forms:  # lower case: used as a function-like context manager
    """Hints asked inside take pods' API dicts from ``convert`` (the runtime's memo).

    A class rather than a generator: the queue enters it for every hint it asks.
    """

    __slots__ = ("_convert", "_token")

    def __init__(self, convert: PodForm | None) -> None:
        self._convert = convert

    def __enter__(self) -> None:
        self._token = _POD_FORM.set(self._convert)

    def __exit__(self, *_: object) -> None:
        _POD_FORM.reset(self._token)


def api(pod: Any) -> Mapping[str, Any]:
    """A pod (informer model or API dict) as its API dict: read-only, it may be shared."""
    if isinstance(pod, Mapping):
        return pod
    convert = _POD_FORM.get()
    return convert(pod) if convert is not None else msgspec.to_builtins(pod)


node_info = ByIdentity(lambda node: NodeInfo.of(to_api(node)), 256)


def spec_of(pod: Any) -> Mapping[str, Any]:
    found: Mapping[str, Any] = api(pod).get("spec") or {}
    return found
