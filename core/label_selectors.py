"""Label selectors as plain tuples, for interning and matching against pod label sets.

A selector is a tuple of (key, operator, values) requirements that must all hold, or None
for metav1's nil selector, which matches nothing (``{}`` matches everything). Counters
(see core/spread.py) are keyed by these tuples.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "NOTHING_KEY",
    "CounterKey",
    "Part",
    "Selector",
    "candidates",
    "counts_nothing",
    "label_selector",
    "parts_match",
    "selector_matches",
]

# A label selector: a tuple of (key, operator, values) all of which must hold, or None for
# metav1's nil selector, which matches nothing.
Requirement = tuple[str, str, tuple[str, ...]]
Selector = tuple[Requirement, ...] | None
# A counter counts the pods that match every (namespaces, selector) part (namespaces None:
# any namespace), or ("term", id): the pods that carry an interned affinity term, or
# ("spread", namespace, selector): the pods a spread constraint counts (not terminating).
Part = tuple[frozenset[str] | None, Selector]
CounterKey = tuple[Part, ...] | tuple[str, int] | tuple[str, str, Selector]
NOTHING_KEY: CounterKey = ((frozenset(), None),)


def label_selector(raw: Mapping[str, Any] | None) -> Selector:
    """metav1.LabelSelectorAsSelector: None matches nothing, {} everything."""
    if raw is None:
        return None
    reqs: list[Requirement] = [
        (k, "In", (v,)) for k, v in sorted((raw.get("matchLabels") or {}).items())
    ]
    for expr in raw.get("matchExpressions") or ():
        reqs.append(
            (expr.get("key", ""), expr.get("operator", ""), tuple(expr.get("values") or ()))
        )
    return tuple(reqs)


def _requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    key, op, values = req
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    return False


def selector_matches(selector: Selector, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False
    return all(_requirement_matches(r, labels) for r in selector)


def counts_nothing(selector: Selector) -> bool:
    """Spread counts no pods for a nil selector nor for the empty (match-all) one."""
    return selector is None or selector == ()


def candidates(
    selector: Selector, index: Mapping[tuple[str, str], set[int]], everyone: Iterable[int]
):
    """Ids that may match: those with the first In requirement's pair, else everyone."""
    for key, op, values in selector or ():
        if op == "In":
            found: set[int] = set()
            for value in values:
                found |= index.get((key, value), set())
            return found
    return set(everyone)


def parts_match(key: tuple[Part, ...], namespace: str, labels: Mapping[str, str]) -> bool:
    return all(
        (namespaces is None or namespace in namespaces) and selector_matches(selector, labels)
        for namespaces, selector in key
    )
