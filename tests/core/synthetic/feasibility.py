"""A plain check of whether a pod could run on an empty node (static filters only).

It reads the API objects directly, independently of the generators, so that tests can hold
the workloads to their promise: schedulable unless meant not to be.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from .quantities import parse


def effective_requests(pod: dict[str, Any]) -> dict[str, Fraction]:
    """Max of any init container and the sum of the app containers, per resource."""
    total: dict[str, Fraction] = {}
    for c in pod["spec"]["containers"]:
        for resource, amount in c.get("resources", {}).get("requests", {}).items():
            total[resource] = total.get(resource, Fraction(0)) + parse(amount)
    for c in pod["spec"].get("initContainers", []):
        for resource, amount in c.get("resources", {}).get("requests", {}).items():
            total[resource] = max(total.get(resource, Fraction(0)), parse(amount))
    return total


def _expression_matches(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], expr.get("values", [])
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, ValueError):
            return False
        return have > want if op == "Gt" else have < want
    raise AssertionError(f"unknown operator {op}")


def _tolerated(taint: dict[str, Any], tolerations: list[dict[str, Any]]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("operator", "Equal") == "Exists":
            if not t.get("key") or t["key"] == taint["key"]:
                return True
        elif t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def fits_empty_node(pod: dict[str, Any], node: dict[str, Any]) -> bool:
    spec, labels = pod["spec"], node["metadata"]["labels"]
    if node["spec"].get("unschedulable"):
        return False
    allocatable = node["status"]["allocatable"]
    for resource, amount in effective_requests(pod).items():
        if amount > parse(allocatable.get(resource, "0")):
            return False
    if any(labels.get(k) != v for k, v in spec.get("nodeSelector", {}).items()):
        return False
    required = (
        spec.get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    if required and not any(
        all(_expression_matches(e, labels) for e in term.get("matchExpressions", []))
        for term in required["nodeSelectorTerms"]
    ):
        return False
    tolerations = spec.get("tolerations", [])
    return all(
        _tolerated(taint, tolerations)
        for taint in node["spec"].get("taints", [])
        if taint["effect"] in ("NoSchedule", "NoExecute")
    )
