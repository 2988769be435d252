"""Label selectors and node selector terms, as apimachinery and component-helpers match them.

Three selector flavours meet in scheduling, and their empty cases differ:

* a ``metav1.LabelSelector`` (pod affinity terms, spread constraints): a missing
  selector matches nothing, an empty one ``{}`` matches everything;
* a ``nodeSelector`` map: every pair must be present;
* a ``NodeSelector`` of node affinity: its terms are ORed, the expressions of a term
  ANDed; empty terms are dropped, so a selector with no non-empty term matches no node.

Gt and Lt compare label values as Go's ``strconv.ParseInt`` reads them: an optional
sign and decimal digits within int64. A label that is not such an integer never
satisfies Gt or Lt; a requirement whose own value is not an integer is invalid.

A ``metav1.LabelSelector`` is checked in full as apimachinery does (operators, value
counts, key and value syntax; see ``core.label_selectors.label_selector_error``): old
objects can carry selectors the API server refuses today. What an invalid selector does
to scheduling depends on the plugin that reads it (see the core.label_selectors
docstring). Node selector terms are checked for their operators and values only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesalvo.core.label_selectors import InvalidSelector, label_selector_error

__all__ = [
    "EVERYTHING",
    "NOTHING",
    "InvalidSelector",
    "NodeSelectorTerm",
    "Requirement",
    "Selector",
    "label_selector",
    "node_selector_terms",
    "parse_go_int",
    "selector_from_set",
]

_GO_INT = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
_NODE_OPERATORS = _LABEL_OPERATORS | {"Gt", "Lt"}


def parse_go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: the integer, or None when Go would fail."""
    if not _GO_INT.match(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


@dataclass(frozen=True)
class Requirement:
    """One ``key operator values`` requirement (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def check(self) -> None:
        """Raise InvalidSelector where labels.NewRequirement would refuse this requirement."""
        if self.operator in ("In", "NotIn") and not self.values:
            raise InvalidSelector(f"{self.key}: values set can't be empty for {self.operator}")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise InvalidSelector(f"{self.key}: values set must be empty for {self.operator}")
        if self.operator in ("Gt", "Lt"):
            if len(self.values) != 1:
                raise InvalidSelector(
                    f"{self.key}: exactly one value is required for {self.operator}"
                )
            if parse_go_int(self.values[0]) is None:
                raise InvalidSelector(
                    f"{self.key}: the value of {self.operator} must be an integer"
                )

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator in ("Gt", "Lt"):
            if not present:
                return False
            value = parse_go_int(labels[self.key])
            bound = parse_go_int(self.values[0]) if len(self.values) == 1 else None
            if value is None or bound is None:
                return False
            return value > bound if self.operator == "Gt" else value < bound
        return False


@dataclass(frozen=True)
class Selector:
    """A set of requirements, all of which must hold; ``requirements=None`` matches nothing."""

    requirements: tuple[Requirement, ...] | None

    @property
    def empty(self) -> bool:
        """True for the match-everything selector (upstream ``Selector.Empty()``)."""
        return self.requirements == ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.requirements is None:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def with_requirements(self, extra: Iterable[Requirement]) -> Selector:
        """This selector ANDed with more requirements (nothing stays nothing)."""
        if self.requirements is None:
            return self
        return Selector(self.requirements + tuple(extra))


NOTHING = Selector(None)
EVERYTHING = Selector(())


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet``: every pair must be present (an empty set matches all)."""
    return Selector(tuple(Requirement(k, "In", (v,)) for k, v in sorted(labels.items())))


def label_selector(raw: Mapping[str, Any] | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: None matches nothing, ``{}`` everything.

    Raises InvalidSelector, with apimachinery's error text, where it fails.
    """
    if raw is None:
        return NOTHING
    error = label_selector_error(raw)
    if error is not None:
        raise InvalidSelector(error)
    match_labels = raw.get("matchLabels") or {}
    requirements = [Requirement(k, "In", (v,)) for k, v in sorted(match_labels.items())]
    for expr in raw.get("matchExpressions") or ():
        values = tuple(expr.get("values") or ())
        requirements.append(Requirement(expr.get("key", ""), expr.get("operator", ""), values))
    return Selector(tuple(requirements))


@dataclass(frozen=True)
class NodeSelectorTerm:
    """One node selector term; ``valid=False`` when it could not be parsed (it never matches)."""

    expressions: tuple[Requirement, ...]
    fields: tuple[Requirement, ...]
    valid: bool
    error: str = ""

    def matches(self, node: Mapping[str, Any]) -> bool:
        if not self.valid:
            return False
        metadata = node.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if not all(r.matches(labels) for r in self.expressions):
            return False
        name = metadata.get("name", "")
        # Upstream only checks fields when the node has a name, which every node has.
        node_fields = {"metadata.name": name} if name else {}
        if self.fields and node_fields:
            for r in self.fields:
                value = node_fields.get(r.key, "")
                if (r.operator == "In") != (value == r.values[0]):
                    return False
        return True


def _node_selector_term(raw: Mapping[str, Any]) -> NodeSelectorTerm:
    expressions: list[Requirement] = []
    fields: list[Requirement] = []
    errors: list[str] = []
    for expr in raw.get("matchExpressions") or ():
        r = Requirement(
            expr.get("key", ""), expr.get("operator", ""), tuple(expr.get("values") or ())
        )
        if r.operator not in _NODE_OPERATORS:
            errors.append(f"unsupported operator {r.operator!r}")
            continue
        try:
            r.check()
        except InvalidSelector as err:
            errors.append(str(err))
            continue
        expressions.append(r)
    for expr in raw.get("matchFields") or ():
        r = Requirement(
            expr.get("key", ""), expr.get("operator", ""), tuple(expr.get("values") or ())
        )
        if r.operator not in ("In", "NotIn"):
            errors.append(f"unsupported field operator {r.operator!r}")
        elif len(r.values) != 1:
            errors.append(f"{r.key}: matchFields values must have one element")
        else:
            fields.append(r)
    return NodeSelectorTerm(tuple(expressions), tuple(fields), not errors, "; ".join(errors))


def _is_empty_term(raw: Mapping[str, Any]) -> bool:
    return not raw.get("matchExpressions") and not raw.get("matchFields")


def node_selector_terms(raw: Mapping[str, Any]) -> tuple[NodeSelectorTerm, ...]:
    """The non-empty terms of a ``NodeSelector`` (a node matches when any term matches)."""
    return tuple(
        _node_selector_term(term)
        for term in raw.get("nodeSelectorTerms") or ()
        if not _is_empty_term(term)
    )


def preferred_terms(raw: Iterable[Mapping[str, Any]]) -> tuple[tuple[int, NodeSelectorTerm], ...]:
    """(weight, term) of preferred scheduling terms; zero weights and empty terms dropped.

    An unparsable preferred term makes kube-scheduler fail the attempt with an error,
    so it raises InvalidSelector here.
    """
    out = []
    for entry in raw:
        weight = int(entry.get("weight") or 0)
        preference = entry.get("preference") or {}
        if weight == 0 or _is_empty_term(preference):
            continue
        term = _node_selector_term(preference)
        if not term.valid:
            raise InvalidSelector(term.error)
        out.append((weight, term))
    return tuple(out)
