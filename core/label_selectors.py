"""Label selectors as plain tuples, for interning and matching against pod label sets.

A selector is a tuple of (key, operator, values) requirements that must all hold, or None
for metav1's nil selector, which matches nothing (``{}`` matches everything). Counters
(see core/spread.py) are keyed by these tuples.

Invalid selectors: apimachinery's ``LabelSelectorAsSelector`` refuses a selector with an
unknown operator, a key that is not a qualified name, a value that is not a label value,
In/NotIn without values or Exists/DoesNotExist with values; ``label_selector_error``
gives its error text word for word. The API server rejects such selectors in new pods,
but older objects can still carry them, and kube-scheduler then does, per caller:

* a spread constraint of the incoming pod (PodTopologySpread): the scheduling attempt
  fails with an error (PreFilter for DoNotSchedule constraints, PreScore for
  ScheduleAnyway ones; see ``spread_constraint_error``);
* a term of the incoming pod, in its labelSelector or namespaceSelector, in any of its
  four sections (InterPodAffinity): PreFilter rejects the pod as unschedulable and
  unresolvable with "parsing pod: ..." (see ``pod_affinity_error``);
* a term of a pod already placed: the whole section (say, its required anti-affinity
  terms) is dropped, the other sections still count;
* the selector of the pod's ReplicaSet or StatefulSet (default spread constraints): it
  is ignored, the Services' selector alone is used.

``label_selector`` turns an invalid selector into None (it matches nothing), which is the
ReplicaSet/StatefulSet rule; ``parse_label_selector`` raises InvalidSelector instead.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard, cast

__all__ = [
    "NOTHING_KEY",
    "CounterKey",
    "InvalidSelector",
    "Part",
    "Selector",
    "SpreadKey",
    "TermKey",
    "candidates",
    "counts_nothing",
    "indexed_candidates",
    "is_spread_key",
    "is_term_key",
    "label_selector",
    "label_selector_error",
    "parse_label_selector",
    "parse_selector",
    "parts_match",
    "parts_of",
    "pod_affinity_error",
    "selector_matches",
    "spread_constraint_error",
    "term_error",
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
SpreadKey = tuple[str, str, Selector]  # ("spread", namespace, selector)
TermKey = tuple[str, int]  # ("term", term id): pods carrying an inter-pod term


def is_spread_key(key: CounterKey) -> TypeGuard[SpreadKey]:
    """A spread counter's key: the pods of one namespace a selector matches."""
    return bool(key) and key[0] == "spread"


def is_term_key(key: CounterKey) -> TypeGuard[TermKey]:
    """An inter-pod term's counter key: the pods that carry the term."""
    return bool(key) and key[0] == "term"


def parts_of(key: CounterKey) -> tuple[Part, ...]:
    """A key made of (namespaces, selector) parts, as such (neither spread nor term)."""
    return cast(tuple[Part, ...], key)


class InvalidSelector(ValueError):
    """A selector LabelSelectorAsSelector refuses; the message is apimachinery's error."""


def label_selector(raw: Mapping[str, Any] | None) -> Selector:
    """metav1.LabelSelectorAsSelector: None matches nothing, {} everything.

    An invalid selector gives None too (see the module docstring for when that is
    kube-scheduler's behaviour and when the caller must use parse_label_selector).
    """
    if raw is None:
        return None
    return _parse(raw)[0]


def parse_label_selector(raw: Mapping[str, Any] | None) -> Selector:
    """metav1.LabelSelectorAsSelector, raising InvalidSelector where it fails."""
    if raw is None:
        return None
    selector, error = _parse(raw)
    if error is not None:
        raise InvalidSelector(error)
    return selector


def parse_selector(raw: Mapping[str, Any] | None) -> tuple[Selector, str | None]:
    """metav1.LabelSelectorAsSelector's selector and error, in one pass.

    ``(label_selector(raw), label_selector_error(raw))``: for callers that need both.
    """
    if raw is None:
        return None, None
    return _parse(raw)


def _parse(raw: Mapping[str, Any]) -> tuple[Selector, str | None]:
    """The selector and None, or None and the error of its first failing requirement.

    matchLabels come first (upstream walks that map in random order; here in key
    order), then matchExpressions in order.
    """
    match_labels = raw.get("matchLabels")
    expressions = raw.get("matchExpressions")
    if not expressions and match_labels and len(match_labels) == 1:
        # The most common selector, one label: the same result without a sort or a list,
        # and for a valid label (the usual case) without building any error text.
        ((key, value),) = match_labels.items()
        if _valid_value(value) and _valid_key(key):
            return ((key, "In", (value,)),), None
        error = _requirement_error(key, "Equals", (value,))
        return (None, error) if error is not None else (((key, "In", (value,)),), None)
    reqs: list[Requirement] = []
    if match_labels:
        for key, value in sorted(match_labels.items()):
            error = _requirement_error(key, "Equals", (value,))
            if error is not None:
                return None, error
            reqs.append((key, "In", (value,)))
    for expr in expressions or ():
        operator = expr.get("operator", "")
        if operator not in _OPERATORS:
            return None, f"{_go_quote(operator)} is not a valid label selector operator"
        key, values = expr.get("key", ""), tuple(expr.get("values") or ())
        error = _requirement_error(key, operator, values)
        if error is not None:
            return None, error
        reqs.append((key, operator, values))
    return tuple(reqs), None


def selector_matches(selector: Selector, labels: Mapping[str, str]) -> bool:
    """Whether every requirement holds for ``labels`` (a nil selector matches nothing)."""
    if selector is None:
        return False
    # A plain loop, not all() over a generator: this runs for every class and counter
    # of a burst, where the generator's frames cost more than the tests themselves.
    for key, op, values in selector:
        if op == "In":
            if key not in labels or labels[key] not in values:
                return False
        elif op == "NotIn":
            if key in labels and labels[key] in values:
                return False
        elif op == "Exists":
            if key not in labels:
                return False
        elif op == "DoesNotExist":
            if key in labels:
                return False
        else:
            return False
    return True


def counts_nothing(selector: Selector) -> bool:
    """Spread counts no pods for a nil selector nor for the empty (match-all) one."""
    return selector is None or selector == ()


def candidates(
    selector: Selector, index: Mapping[tuple[str, str], set[int]], everyone: Iterable[int]
):
    """Ids that may match: those with the first In requirement's pair, else everyone."""
    found = indexed_candidates(selector, index)
    return set(everyone) if found is None else found


def indexed_candidates(
    selector: Selector, index: Mapping[tuple[str, str], set[int]]
) -> set[int] | None:
    """The ids with the first In requirement's pair (a new set), or None when the
    selector has no In requirement and any id may match."""
    for key, op, values in selector or ():
        if op == "In":
            if len(values) == 1:  # the common case (matchLabels): one copy, no unions
                return set(index.get((key, values[0]), ()))
            found: set[int] = set()
            for value in values:
                found |= index.get((key, value), set())
            return found
    return None


def parts_match(key: tuple[Part, ...], namespace: str, labels: Mapping[str, str]) -> bool:
    return all(
        (namespaces is None or namespace in namespaces) and selector_matches(selector, labels)
        for namespaces, selector in key
    )


# --- apimachinery's validation, with its error texts -----------------------------------

_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED = re.compile(_QUALIFIED_FMT)
_QUALIFIED_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
_QUALIFIED_EXAMPLES = ("MyName", "my.name", "123-abc")
_LABEL_VALUE_FMT = f"({_QUALIFIED_FMT})?"
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', "
    "'_' or '.', and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_SUBDOMAIN = re.compile(_SUBDOMAIN_FMT)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _go_len(text: str) -> int:
    return len(text.encode())  # Go's len counts UTF-8 bytes


def _subdomain_errors(value: str) -> list[str]:
    errors = []
    if _go_len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not _SUBDOMAIN.fullmatch(value):
        errors.append(_regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errors


def _qualified_name_errors(value: str) -> list[str]:
    """validation.IsQualifiedName: a label key such as ``example.com/name``."""
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a qualified name "
            + _regex_error(_QUALIFIED_MSG, _QUALIFIED_FMT, *_QUALIFIED_EXAMPLES)
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errors = []
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + e for e in _subdomain_errors(parts[0])]
    if not name:
        errors.append("name part must be non-empty")
    elif _go_len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QUALIFIED.fullmatch(name):
        errors.append(
            "name part " + _regex_error(_QUALIFIED_MSG, _QUALIFIED_FMT, *_QUALIFIED_EXAMPLES)
        )
    return errors


def _label_value_errors(value: str) -> list[str]:
    """validation.IsValidLabelValue."""
    errors = []
    if _go_len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL_VALUE.fullmatch(value):
        errors.append(
            _regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errors


def _go_quote(text: str) -> str:
    """strconv.Quote for the printable text labels hold (and escapes for the rest)."""
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _go_json(values: list[str]) -> str:
    """encoding/json of a []string (nil: null), HTML characters escaped as Go does."""
    if not values:
        return "null"
    text = json.dumps(values, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _aggregate(messages: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): duplicates dropped, several in brackets."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _valid_value(value: Any) -> bool:
    """validation.IsValidLabelValue gives no error: a quick yes for the usual value (the
    regex admits ASCII only, so its length in characters is its length in bytes)."""
    return type(value) is str and len(value) <= 63 and _LABEL_VALUE.fullmatch(value) is not None


@functools.lru_cache(maxsize=1 << 12)
def _valid_key(key: Any) -> bool:
    """validation.IsQualifiedName gives no error (keys repeat: each is checked once)."""
    return type(key) is str and not _qualified_name_errors(key)


# Placed pods repeat the same few requirements: checking each distinct one once keeps
# selector parsing (done for every placed pod with affinity terms) cheap.
@functools.lru_cache(maxsize=1 << 16)
def _requirement_error(key: str, operator: str, values: tuple[str, ...]) -> str | None:
    """labels.NewRequirement's error for one requirement, or None when it is valid."""
    errors = []
    key_errors = _qualified_name_errors(key)
    if key_errors:
        errors.append(f"key: Invalid value: {_go_quote(key)}: {'; '.join(key_errors)}")
    if operator in ("In", "NotIn") and not values:
        errors.append(
            f"values: Invalid value: {_go_json(list(values))}: "
            "for 'in', 'notin' operators, values set can't be empty"
        )
    if operator == "Equals" and len(values) != 1:
        errors.append(
            f"values: Invalid value: {_go_json(list(values))}: "
            "exact-match compatibility requires one single value"
        )
    if operator in ("Exists", "DoesNotExist") and values:
        errors.append(
            f"values: Invalid value: {_go_json(list(values))}: "
            "values set must be empty for exists and does not exist"
        )
    for i, value in enumerate(values):
        value_errors = _label_value_errors(value)
        if value_errors:
            errors.append(
                f"values[{i}][{key}]: Invalid value: {_go_quote(value)}: " + "; ".join(value_errors)
            )
    return _aggregate(errors) if errors else None


def label_selector_error(raw: Mapping[str, Any] | None) -> str | None:
    """The error LabelSelectorAsSelector gives for ``raw``, or None when it is valid."""
    return None if raw is None else _parse(raw)[1]


# --- what kube-scheduler reports for an incoming pod with an invalid selector -----------

_TERM_SECTIONS = (
    ("requiredAffinityTerms", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"),
    (
        "requiredAntiAffinityTerms",
        "podAntiAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    ),
    (
        "preferredAffinityTerms",
        "podAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    ),
    (
        "preferredAntiAffinityTerms",
        "podAntiAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    ),
)


def term_error(term: Mapping[str, Any]) -> str | None:
    """newAffinityTerm's error: the labelSelector's, else the namespaceSelector's."""
    return label_selector_error(term.get("labelSelector")) or label_selector_error(
        term.get("namespaceSelector")
    )


def pod_affinity_error(spec: Mapping[str, Any]) -> str | None:
    """framework.NewPodInfo's parse error for a pod's affinity terms, or None.

    Each section reports its first failing term; the sections' errors are aggregated.
    InterPodAffinity's PreFilter rejects the pod with ``"parsing pod: " + error``
    (unschedulable and unresolvable); its PreScore, when the filter is disabled, fails
    the attempt with ``failed to parse pod: `` + error.
    """
    affinity = spec.get("affinity") or {}
    errors = []
    for name, kind, field in _TERM_SECTIONS:
        for entry in (affinity.get(kind) or {}).get(field) or ():
            term = entry.get("podAffinityTerm") or {} if field.startswith("preferred") else entry
            error = term_error(term)
            if error is not None:
                errors.append(f"{name}: {error}")
                break
    return _aggregate(errors) if errors else None


def spread_constraint_error(
    spec: Mapping[str, Any],
    when_unsatisfiable: str,
    parsed: Sequence[tuple[Selector, str | None]] | None = None,
) -> str | None:
    """The first error among the pod's own constraints of one kind, or None.

    DoNotSchedule: PodTopologySpread's PreFilter fails the attempt with
    ``running PreFilter plugin "PodTopologySpread": get constraints from pod: obtaining
    pod's hard topology spread constraints: `` + error. ScheduleAnyway: its PreScore, run
    only when more than one node is feasible, with ``running PreScore plugin
    "PodTopologySpread": calculating preScoreState: obtaining pod's soft topology spread
    constraints: `` + error.

    ``parsed``: ``parse_selector`` of each constraint's labelSelector, when the caller
    has it already (the encoder does), so that no selector is parsed twice.
    """
    constraints = spec.get("topologySpreadConstraints") or ()
    for i, constraint in enumerate(constraints):
        if constraint.get("whenUnsatisfiable") == when_unsatisfiable:
            if parsed is not None:
                error = parsed[i][1]
            else:
                error = label_selector_error(constraint.get("labelSelector"))
            if error is not None:
                return error
    return None
