"""Coscheduling's queueing hint: which pod events can help a gang that waits."""

from __future__ import annotations

from typing import Any

from kubesalvo.core.plugins.coscheduling.gang import gang_of
from kubesalvo.core.plugins.framework import ClusterEvent, EventResource

__all__ = ["queueing_hint"]


def queueing_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """A gang waiting for members, or rolled back, is helped by a pod event only when the
    pod is one of its own members (bound by someone, or relabelled into the gang); room
    freed elsewhere wakes it through the filters that rejected its other members. Node
    events may bring room for a PodGroup's minResources."""
    if event.resource is not EventResource.POD:
        return True
    other = new if new is not None else old
    if other is None:
        return True
    group = gang_of(pod)
    return group is None or gang_of(other) == group
