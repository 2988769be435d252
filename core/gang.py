"""Gangs: pods that must be placed together, at least ``minAvailable`` of them, or not at all.

A pod belongs to a group through the label ``podGroup`` or scheduler-plugins'
``scheduling.x-k8s.io/pod-group`` (the first one present wins); groups are per
namespace. The group's minimum is the ``minAvailable`` label of its first pod (in queue
order) that carries one; when none does, every pod of the group in the burst must be
placed. A malformed ``minAvailable`` (not a positive decimal integer) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "GROUP_LABELS",
    "MIN_AVAILABLE_LABEL",
    "GroupKey",
    "group_minimums",
    "group_of",
    "min_available",
]

GROUP_LABELS = ("podGroup", "scheduling.x-k8s.io/pod-group")
MIN_AVAILABLE_LABEL = "minAvailable"


@dataclass(frozen=True, order=True)
class GroupKey:
    """A pod group: its namespace and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def _labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def group_of(pod: Mapping[str, Any]) -> GroupKey | None:
    """The pod's group, or None for a pod placed on its own."""
    labels = _labels(pod)
    for label in GROUP_LABELS:
        if labels.get(label):
            namespace = (pod.get("metadata") or {}).get("namespace") or "default"
            return GroupKey(namespace, labels[label])
    return None


def min_available(pod: Mapping[str, Any]) -> int | None:
    """The pod's ``minAvailable`` label as a positive integer, or None when absent."""
    raw = _labels(pod).get(MIN_AVAILABLE_LABEL)
    if raw is None:
        return None
    if not re.fullmatch(r"[0-9]+", raw) or int(raw) < 1:
        raise ValueError(f"label {MIN_AVAILABLE_LABEL}={raw!r} is not a positive integer")
    return int(raw)


def group_minimums(pods: Iterable[Mapping[str, Any]]) -> dict[GroupKey, int]:
    """The minimum of every group in a burst (pods in queue order)."""
    members: dict[GroupKey, int] = {}
    declared: dict[GroupKey, int] = {}
    for pod in pods:
        key = group_of(pod)
        if key is None:
            continue
        members[key] = members.get(key, 0) + 1
        value = min_available(pod)
        if value is not None and key not in declared:
            declared[key] = value
    return {key: declared.get(key, count) for key, count in members.items()}
