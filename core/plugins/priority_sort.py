"""PrioritySort: the queue pops the higher ``spec.priority`` first, then the earlier pod.

Its key reads what the queue keeps of a pod (``sched/queue``'s ``QueuedPod``): its
priority (an unset one counts as 0) and its queue timestamp, refreshed each time it comes
back after a failed attempt.
"""

from __future__ import annotations

from typing import Any

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import QUEUE_SORT, PluginSpec

__all__ = ["NAME", "sort_key"]

NAME = names.PRIORITY_SORT


def sort_key(qp: Any) -> tuple[Any, ...]:
    return (-qp.priority, qp.timestamp)


SPEC = PluginSpec(NAME, frozenset({QUEUE_SORT}), sort_key=sort_key)
