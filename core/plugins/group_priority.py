"""GroupPriority (kubesalvo): a queue sort by the pod's group priority, then its QoS class.

Pods pop in this order:

1. the integer label ``groupPriority``, higher first (the seeds' label, unchanged). A
   missing label counts as 0; so does a value that is not a decimal integer, and the
   runtime then writes one Warning event on the pod (:func:`group_priority` says which);
2. the pod's QoS class as the kubelet computes it (:func:`qos_class`): Guaranteed, then
   Burstable, then BestEffort;
3. the time the pod was queued (earlier first).

The members of one gang (``core/plugins/coscheduling/gang.py``) are popped together: the
queue takes every pending sibling of a gang member it pops into the same burst, whatever their keys.

Enable it as the profile's only queue sort (kube-scheduler allows one)::

    plugins:
      queueSort:
        enabled: [{name: GroupPriority}]
        disabled: [{name: "*"}]

The key itself lives with the queue (``sched/queue/sorting.py``), which owns the
timestamps it compares; here are the parts that depend only on the pod.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import IntEnum
from typing import Any

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import QUEUE_SORT, PluginSpec
from kubesalvo.core.quantity import parse_quantity

__all__ = [
    "GROUP_PRIORITY_LABEL",
    "NAME",
    "QosClass",
    "group_priority",
    "invalid_priority_note",
    "qos_class",
]

NAME = names.GROUP_PRIORITY
GROUP_PRIORITY_LABEL = "groupPriority"
# Go's strconv.Atoi range would be int64; a label longer than this is refused outright so
# that a hostile label cannot make a huge integer.
_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
# The resources the kubelet's QoS computation looks at.
_QOS_RESOURCES = ("cpu", "memory")


class QosClass(IntEnum):
    """The kubelet's QoS classes; the value is the pop rank (lower first)."""

    GUARANTEED = 0
    BURSTABLE = 1
    BEST_EFFORT = 2

    @property
    def text(self) -> str:
        return {0: "Guaranteed", 1: "Burstable", 2: "BestEffort"}[self.value]


def group_priority(labels: Mapping[str, str]) -> tuple[int, bool]:
    """The pod's group priority and whether its label was valid (absent counts as valid)."""
    raw = labels.get(GROUP_PRIORITY_LABEL)
    if raw is None:
        return 0, True
    if _INTEGER.fullmatch(raw):
        return int(raw), True
    return 0, False


def invalid_priority_note(value: str) -> str:
    """The Warning event's text for a ``groupPriority`` label that is not an integer."""
    return (
        f"label {GROUP_PRIORITY_LABEL}={value!r} is not an integer: GroupPriority orders "
        f"the pod as group priority 0"
    )


def _positive(raw: str) -> bool:
    try:
        return parse_quantity(raw) > 0
    except ValueError:
        return False  # an unparsable quantity is refused by the API server anyway


def qos_class(containers: Iterable[tuple[Mapping[str, str], Mapping[str, str]]]) -> QosClass:
    """The QoS class of a pod from its containers' (requests, limits), init containers
    included, as the kubelet's ``GetPodQOS``: no cpu or memory request or limit anywhere
    is BestEffort; cpu and memory limits on every container, with the summed requests
    equal to the summed limits, is Guaranteed; anything else is Burstable."""
    requests: dict[str, object] = {}
    limits: dict[str, object] = {}
    guaranteed = True
    for container_requests, container_limits in containers:
        for name in _QOS_RESOURCES:
            raw = container_requests.get(name)
            if raw is not None and _positive(raw):
                requests[name] = requests.get(name, 0) + parse_quantity(raw)  # type: ignore[operator]
        found = set()
        for name in _QOS_RESOURCES:
            raw = container_limits.get(name)
            if raw is not None and _positive(raw):
                found.add(name)
                limits[name] = limits.get(name, 0) + parse_quantity(raw)  # type: ignore[operator]
        if len(found) != len(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return QosClass.BEST_EFFORT
    equal = all(limits.get(name) == amount for name, amount in requests.items())
    if guaranteed and equal and len(requests) == len(limits):
        return QosClass.GUARANTEED
    return QosClass.BURSTABLE


def _resources(container: Any) -> tuple[dict[str, str], dict[str, str]]:
    resources = container.resources
    if resources is None:
        return {}, {}
    return resources.requests, resources.limits


def sort_key(qp: Any) -> tuple[Any, ...]:
    """The key of a queued pod (``sched/queue``'s ``QueuedPod``, its pod the informers'
    model): the higher groupPriority, then the better QoS class, then the earlier queued."""
    spec = qp.pod.spec
    priority, _ = group_priority(qp.pod.metadata.labels)
    pod_level = spec.resources
    if pod_level is not None and (pod_level.requests or pod_level.limits):
        # Pod-level resources (beta in 1.34) decide the class when set, as in the kubelet.
        qos = qos_class([(pod_level.requests, pod_level.limits)])
    else:
        containers = (*spec.init_containers, *spec.containers)
        qos = qos_class(_resources(c) for c in containers)
    return (-priority, int(qos), qp.timestamp)


SPEC = PluginSpec(NAME, frozenset({QUEUE_SORT}), sort_key=sort_key)
