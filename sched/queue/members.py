"""Which pod group (gang) a pod of the informers belongs to, as ``core.gang.group_of`` reads
it from an API dict: the queue pops gangs whole and Coscheduling's hint compares groups."""

from __future__ import annotations

from typing import Any

from kubesalvo.core import gang

__all__ = ["gang_of"]


def gang_of(pod: Any) -> gang.GroupKey | None:
    """The pod group of a pod (the informers' model), or None for a pod on its own."""
    labels = pod.metadata.labels
    for label in gang.GROUP_LABELS:
        name = labels.get(label)
        if name:
            return gang.GroupKey(pod.metadata.namespace or "default", name)
    return None
