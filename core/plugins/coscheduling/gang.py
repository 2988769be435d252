"""Coscheduling's gangs: pods that must be placed together, at least ``minAvailable`` of
them, or not at all.

A pod belongs to a group through the label ``podGroup`` or scheduler-plugins'
``scheduling.x-k8s.io/pod-group`` (the first one present wins); groups are per
namespace. The group's minimum is the ``minAvailable`` label of its first pod (in queue
order) that carries one; when none does, every pod of the group in the burst must be
placed. A malformed ``minAvailable`` (not a positive decimal integer) on any member
refuses the whole group at PreFilter: its members are not tried, each reported with
:func:`malformed_groups`' text.

Where scheduler-plugins' PodGroup CRD (``scheduling.x-k8s.io/v1alpha1``) is installed, a
PodGroup object of the group's namespace and name gives the minimum instead
(``spec.minMember``), with ``spec.minResources`` and ``spec.scheduleTimeoutSeconds``
(:func:`pod_group_spec` reads them).

``group_of`` reads an API dict (the encoder, the kernel's results, the oracle);
``gang_of`` reads the informers' pod model (the queue pops gangs whole, the runtime half
counts members, Coscheduling's hint compares groups).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesalvo.core.resources import node_allocatable

__all__ = [
    "GROUP_LABELS",
    "MIN_AVAILABLE_LABEL",
    "POD_GROUP_LABEL",
    "GroupKey",
    "PodGroupSpec",
    "gang_of",
    "group_minimums",
    "group_of",
    "malformed_groups",
    "malformed_minimum",
    "min_available",
    "pod_group_spec",
]

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
GROUP_LABELS = ("podGroup", POD_GROUP_LABEL)
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


def malformed_minimum(pods: Iterable[Mapping[str, Any]]) -> str:
    """Why a ``minAvailable`` label among ``pods`` cannot be read, naming the first such
    pod ("" when every one can)."""
    for pod in pods:
        try:
            min_available(pod)
        except ValueError as error:
            name = (pod.get("metadata") or {}).get("name", "")
            return f"{error} (pod {name})"
    return ""


def malformed_groups(pods: Iterable[Mapping[str, Any]]) -> dict[GroupKey, str]:
    """The groups of a burst with a malformed ``minAvailable`` label, each with the
    PreFilter text its members are refused with (Coscheduling does not try them)."""
    members: dict[GroupKey, list[Mapping[str, Any]]] = {}
    for pod in pods:
        key = group_of(pod)
        if key is not None:
            members.setdefault(key, []).append(pod)
    refused = {}
    for key, group in members.items():
        why = malformed_minimum(group)
        if why:
            refused[key] = f"pod group {key}: {why}"
    return refused


def group_minimums(pods: Iterable[Mapping[str, Any]]) -> dict[GroupKey, int]:
    """The minimum of every group in a burst (pods in queue order); a malformed label
    counts as absent (:func:`malformed_groups` names the groups that have one)."""
    members: dict[GroupKey, int] = {}
    declared: dict[GroupKey, int] = {}
    for pod in pods:
        key = group_of(pod)
        if key is None:
            continue
        members[key] = members.get(key, 0) + 1
        try:
            value = min_available(pod)
        except ValueError:
            value = None
        if value is not None and key not in declared:
            declared[key] = value
    return {key: declared.get(key, count) for key, count in members.items()}


@dataclass(frozen=True)
class PodGroupSpec:
    """A PodGroup object's spec: the minimum, the room it needs, its own timeout."""

    min_member: int
    min_resources: dict[str, int]  # resource -> amount in the state's units
    timeout_seconds: int | None


def pod_group_spec(obj: Mapping[str, Any]) -> PodGroupSpec:
    """Read a PodGroup's spec (API JSON); a bad field raises ValueError naming it.

    ``minMember`` defaults to 1 as the API does for an unset int32; a negative one or
    a timeout below 1 is refused (the CRD's schema refuses them too)."""
    spec = obj.get("spec") or {}
    minimum = spec.get("minMember", 1)
    if type(minimum) is not int or minimum < 0:
        raise ValueError(f"spec.minMember={minimum!r} is not a non-negative integer")
    timeout = spec.get("scheduleTimeoutSeconds")
    if timeout is not None and (type(timeout) is not int or timeout < 1):
        raise ValueError(f"spec.scheduleTimeoutSeconds={timeout!r} is not a positive integer")
    raw = spec.get("minResources") or {}
    if not isinstance(raw, Mapping):
        raise ValueError("spec.minResources is not a resource list")
    try:
        units = node_allocatable({"status": {"allocatable": raw}})
    except (ValueError, TypeError) as error:
        raise ValueError(f"spec.minResources: {error}") from None
    wanted = {name: amount for name, amount in units.items() if name in raw and amount}
    return PodGroupSpec(max(minimum, 1), wanted, timeout)


def gang_of(pod: Any) -> GroupKey | None:
    """The pod group of a pod of the informers' model, or None for a pod on its own."""
    labels = pod.metadata.labels
    for label in GROUP_LABELS:
        name = labels.get(label)
        if name:
            return GroupKey(pod.metadata.namespace or "default", name)
    return None
