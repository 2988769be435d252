"""Which nodes a ResourceSlice's devices, or a claim's allocation, are reachable from:
``nodeName``, ``allNodes`` or a node selector (the NodeSelector of core/v1, matched
against one node's name and labels)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["selector_matches", "slice_targets"]


def _parse_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _requirement(req: Mapping[str, Any], value: str | None) -> bool:
    op = req.get("operator")
    values = list(req.get("values") or ())
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and len(values) == 1 and value is not None:
        have, bound = _parse_int(value), _parse_int(values[0])
        if have is None or bound is None:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def selector_matches(selector: Mapping[str, Any], name: str, labels: Mapping[str, str]) -> bool:
    """A NodeSelector: its terms ORed, each term's requirements ANDed (an empty term
    matches nothing); ``matchFields`` knows ``metadata.name`` only."""
    for term in selector.get("nodeSelectorTerms") or ():
        exprs = term.get("matchExpressions") or ()
        fields = term.get("matchFields") or ()
        if not exprs and not fields:
            continue
        if all(_requirement(r, labels.get(r.get("key", ""))) for r in exprs) and all(
            r.get("key") == "metadata.name" and _requirement(r, name) for r in fields
        ):
            return True
    return False


def slice_targets(spec: Mapping[str, Any], name: str, labels: Mapping[str, str]) -> bool:
    """Whether a slice (or a device, with perDeviceNodeSelection) is reachable from the
    node: its nodeName is the node, allNodes, or its nodeSelector matches."""
    if spec.get("nodeName"):
        return bool(spec["nodeName"] == name)
    if spec.get("allNodes"):
        return True
    selector = spec.get("nodeSelector")
    return selector is not None and selector_matches(selector, name, labels)
