"""API objects the real-API-server tests create, built the same way everywhere."""

from __future__ import annotations

from typing import Any


def priority_class(name: str, value: int, policy: str = "PreemptLowerPriority") -> dict[str, Any]:
    """A PriorityClass of the given value and preemptionPolicy."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": policy,
    }
