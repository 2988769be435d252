"""Which nodes a ResourceSlice's devices, or a claim's allocation, are reachable from:
``nodeName``, ``allNodes`` or a node selector (the NodeSelector of core/v1, matched
against one node's name and labels); and the node selector an allocation records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["allocation_node_selector", "selector_matches", "slice_targets"]


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


def allocation_node_selector(specs: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Where an allocation from slices with these specs can be used (the allocation's
    ``nodeSelector``): the node of a node-local slice, else the requirements of the
    slices' node selectors merged into one term, else anywhere (None). A slice selector
    of several terms raises ValueError (validation keeps them out)."""
    fields: list[Mapping[str, Any]] = []
    expressions: list[Mapping[str, Any]] = []
    for spec in specs:
        if spec.get("nodeName"):
            name = {"key": "metadata.name", "operator": "In", "values": [spec["nodeName"]]}
            return {"nodeSelectorTerms": [{"matchFields": [name]}]}
        terms = (spec.get("nodeSelector") or {}).get("nodeSelectorTerms") or ()
        if len(terms) > 1:
            raise ValueError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        for term in terms:
            for req in term.get("matchFields") or ():
                if not any(_same(req, r) for r in fields):
                    fields.append(req)
            for req in term.get("matchExpressions") or ():
                if not any(_same(req, r) for r in expressions):
                    expressions.append(req)
    if not fields and not expressions:
        return None
    merged: dict[str, Any] = {}
    if expressions:
        merged["matchExpressions"] = expressions
    if fields:
        merged["matchFields"] = fields
    return {"nodeSelectorTerms": [merged]}


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (
        a.get("key") == b.get("key")
        and a.get("operator") == b.get("operator")
        and set(a.get("values") or ()) == set(b.get("values") or ())
    )
