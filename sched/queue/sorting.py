"""Queue sort plugins as sort keys: the order in which active pods are popped.

A queue sort plugin is a function from a queued pod to a key; smaller keys pop first.
kube-scheduler's ``PrioritySort`` puts the higher ``spec.priority`` first (an unset
priority counts as 0) and, among equals, the pod queued earlier (its queue timestamp,
refreshed each time it comes back after a failed attempt). The queue appends its own
insertion number to every key, so equal keys keep their arrival order.

kubesalvo's queue sort plugins (QosAware, GroupPriority, Coscheduling) register their key
here with :func:`register_queue_sort` from their own modules. The config loader accepts a
plugin at queueSort only once its key is here (:func:`has_sort_key`), so a module that
registers one must be imported by ``kubesalvo.sched.queue`` or before the configuration
is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubesalvo.core.plugins import names

if TYPE_CHECKING:
    from kubesalvo.sched.queue.queue import QueuedPod

__all__ = [
    "QUEUE_SORTS",
    "SortKey",
    "has_sort_key",
    "priority_sort_key",
    "register_queue_sort",
    "sort_key_for",
]

SortKey = Callable[["QueuedPod"], tuple[Any, ...]]


def priority_sort_key(qp: QueuedPod) -> tuple[Any, ...]:
    return (-qp.priority, qp.timestamp)


# QosAware's order changes with time (each controller's time to violation): the running
# scheduler hands the queue its live table's key at every pop (``SchedulingQueue.
# key_factory``, see sched/qos.py). Registered here with PrioritySort's key, what it
# falls back to where no table runs (``simulate`` places pods in the order given).
QUEUE_SORTS: dict[str, SortKey] = {
    names.PRIORITY_SORT: priority_sort_key,
    names.QOS_AWARE: priority_sort_key,
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
