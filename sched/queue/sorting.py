"""Queue sort plugins as sort keys: the order in which active pods are popped.

A queue sort plugin is a function from a queued pod to a key; smaller keys pop first.
kube-scheduler's ``PrioritySort`` puts the higher ``spec.priority`` first (an unset
priority counts as 0) and, among equals, the pod queued earlier (its queue timestamp,
refreshed each time it comes back after a failed attempt). The queue appends its own
insertion number to every key, so equal keys keep their arrival order.

``GroupPriority`` (``core/plugins/group_priority.py``) puts the higher ``groupPriority``
label first, then the better QoS class, then the earlier queued pod. QosAware's key comes
from its live table (see below). Other queue sort plugins register their key here with
:func:`register_queue_sort`. The config loader accepts a plugin at queueSort only once its
key is here (:func:`has_sort_key`), so a module that registers one must be imported by
``kubesalvo.sched.queue`` or before the configuration is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubesalvo.core.plugins import group_priority, names

if TYPE_CHECKING:
    from kubesalvo.sched.queue.queue import QueuedPod

__all__ = [
    "QUEUE_SORTS",
    "SortKey",
    "group_priority_sort_key",
    "has_sort_key",
    "priority_sort_key",
    "register_queue_sort",
    "sort_key_for",
]

SortKey = Callable[["QueuedPod"], tuple[Any, ...]]


def priority_sort_key(qp: QueuedPod) -> tuple[Any, ...]:
    return (-qp.priority, qp.timestamp)


def _resources(container: Any) -> tuple[dict[str, str], dict[str, str]]:
    resources = container.resources
    if resources is None:
        return {}, {}
    return resources.requests, resources.limits


def group_priority_sort_key(qp: QueuedPod) -> tuple[Any, ...]:
    spec = qp.pod.spec
    priority, _ = group_priority.group_priority(qp.pod.metadata.labels)
    pod_level = spec.resources
    if pod_level is not None and (pod_level.requests or pod_level.limits):
        # Pod-level resources (beta in 1.34) decide the class when set, as in the kubelet.
        qos = group_priority.qos_class([(pod_level.requests, pod_level.limits)])
    else:
        containers = (*spec.init_containers, *spec.containers)
        qos = group_priority.qos_class(_resources(c) for c in containers)
    return (-priority, int(qos), qp.timestamp)


# QosAware's order changes with time (each controller's time to violation): the running
# scheduler hands the queue its live table's key at every pop (``SchedulingQueue.
# key_factory``, see sched/qos.py). Registered here with PrioritySort's key, what it
# falls back to where no table runs (``simulate`` places pods in the order given).
QUEUE_SORTS: dict[str, SortKey] = {
    names.PRIORITY_SORT: priority_sort_key,
    names.GROUP_PRIORITY: group_priority_sort_key,
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
