"""Queue sort plugins as sort keys: the order in which active pods are popped.

A queue sort plugin is a function from a queued pod to a key; smaller keys pop first.
kube-scheduler's ``PrioritySort`` puts the higher ``spec.priority`` first (an unset
priority counts as 0) and, among equals, the pod queued earlier (its queue timestamp,
refreshed each time it comes back after a failed attempt). The queue appends its own
insertion number to every key, so equal keys keep their arrival order.

``GroupPriority`` (``core/plugins/group_priority.py``) puts the higher ``groupPriority``
label first, then the better QoS class, then the earlier queued pod. kubesalvo's other
queue sort plugins register their key here with :func:`register_queue_sort`.
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


QUEUE_SORTS: dict[str, SortKey] = {
    names.PRIORITY_SORT: priority_sort_key,
    names.GROUP_PRIORITY: group_priority_sort_key,
}


def register_queue_sort(plugin: str, key: SortKey) -> None:
    QUEUE_SORTS[plugin] = key


def sort_key_for(plugin: str) -> SortKey:
    try:
        return QUEUE_SORTS[plugin]
    except KeyError:
        raise ValueError(
            f"queue sort plugin {plugin!r} has no sort key; registered: {sorted(QUEUE_SORTS)}"
        ) from None
