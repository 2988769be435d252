"""Queue sort plugins as sort keys: the order in which active pods are popped.

A queue sort plugin is a function from a queued pod to a key; smaller keys pop first.
kube-scheduler's ``PrioritySort`` puts the higher ``spec.priority`` first (an unset
priority counts as 0) and, among equals, the pod queued earlier (its queue timestamp,
refreshed each time it comes back after a failed attempt). The queue appends its own
insertion number to every key, so equal keys keep their arrival order.

Each queue sort plugin's key is its module's (the spec's ``sort_key``): ``GroupPriority``
(``core/plugins/group_priority.py``) puts the higher ``groupPriority`` label first, then
the better QoS class, then the earlier queued pod; QosAware's key comes from its live
table, its module's being the fallback. Other keys may be added with
:func:`register_queue_sort`. The config loader accepts a plugin at queueSort only once its
key is here (:func:`has_sort_key`), so a module that registers one must be imported by
``kubesalvo.sched.queue`` or before the configuration is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubesalvo.core.plugins import registry

if TYPE_CHECKING:
    from kubesalvo.sched.queue.queue import QueuedPod

__all__ = [
    "QUEUE_SORTS",
    "SortKey",
    "has_sort_key",
    "register_queue_sort",
    "sort_key_for",
]

SortKey = Callable[["QueuedPod"], tuple[Any, ...]]

# The plugins' own sort keys (their spec's ``sort_key``); tests and other modules may add
# theirs with :func:`register_queue_sort`.
QUEUE_SORTS: dict[str, SortKey] = {
    name: spec.sort_key for name, spec in registry.PLUGINS.items() if spec.sort_key is not None
}


def register_queue_sort(plugin: str, key: SortKey) -> None:
    QUEUE_SORTS[plugin] = key


def has_sort_key(plugin: str) -> bool:
    return plugin in QUEUE_SORTS


def sort_key_for(plugin: str) -> SortKey:
    try:
        return QUEUE_SORTS[plugin]
    except KeyError:
        raise ValueError(
            f"queue sort plugin {plugin!r} has no sort key; registered: {sorted(QUEUE_SORTS)}"
        ) from None
