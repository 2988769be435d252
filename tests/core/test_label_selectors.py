"""Label selectors: matching, and apimachinery's refusals with its exact error texts.

The expected texts were checked against metav1.LabelSelectorAsSelector of
k8s.io/apimachinery v0.34.4.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesalvo.core.label_selectors import (
    InvalidSelector,
    _requirement_error,
    candidates,
    indexed_candidates,
    label_selector,
    label_selector_error,
    parse_label_selector,
    parse_selector,
    pod_affinity_error,
    selector_matches,
    spread_constraint_error,
)
from kubesalvo.core.pernode import selectors as reference

EMPTY_IN = "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def expr(key, operator, *values):
    out = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


SELECTOR_ERRORS = [
    (None, None),
    ({}, None),
    ({"matchLabels": {"app": "web"}, "matchExpressions": [expr("tier", "Exists")]}, None),
    ({"matchExpressions": [expr("app", "In")]}, EMPTY_IN),
    (
        {"matchExpressions": [expr("app", "NotIn")]},
        EMPTY_IN,
    ),
    (
        {"matchExpressions": [expr("app", "Exists", "a", "b")]},
        'values: Invalid value: ["a","b"]: values set must be empty for exists and does not exist',
    ),
    (
        {"matchExpressions": [expr("app", "Gt", "1")]},
        '"Gt" is not a valid label selector operator',
    ),
    (
        {"matchExpressions": [expr("", "Exists")]},
        'key: Invalid value: "": name part must be non-empty; name part ' + NAME_RULE,
    ),
    (
        {"matchExpressions": [expr("/b", "Exists")]},
        'key: Invalid value: "/b": prefix part must be non-empty',
    ),
    (
        {"matchLabels": {"app": "bad value!"}},
        'values[0][app]: Invalid value: "bad value!": ' + VALUE_RULE,
    ),
    (
        {"matchExpressions": [expr("bad key", "In")]},
        '[key: Invalid value: "bad key": name part ' + NAME_RULE + ", " + EMPTY_IN + "]",
    ),
]


@pytest.mark.parametrize(("raw", "error"), SELECTOR_ERRORS)
def test_label_selector_errors_are_apimachinerys(raw, error):
    assert label_selector_error(raw) == error


@pytest.mark.parametrize(("raw", "error"), SELECTOR_ERRORS)
def test_parse_selector_gives_the_selector_and_its_error_in_one_pass(raw, error):
    assert parse_selector(raw) == (label_selector(raw), error)


def test_a_bad_value_is_refused_each_time_it_is_seen_with_the_same_error():
    raw = {"matchLabels": {"app": "bad value!"}}
    first = label_selector_error(raw)
    assert first == 'values[0][app]: Invalid value: "bad value!": ' + VALUE_RULE
    assert label_selector_error(raw) == first
    assert parse_selector({"matchLabels": {"app": "bad value!"}}) == (None, first)
    assert label_selector_error({"matchLabels": {"app": "good"}}) is None


def test_an_invalid_selector_matches_nothing_or_raises_when_parsed():
    raw = {"matchExpressions": [expr("app", "NotIn")]}
    assert label_selector(raw) is None
    assert not selector_matches(label_selector(raw), {})
    with pytest.raises(InvalidSelector, match="values set can't be empty"):
        parse_label_selector(raw)
    assert parse_label_selector({"matchLabels": {"app": "web"}}) == (("app", "In", ("web",)),)


def test_pod_affinity_error_names_each_failing_section_once():
    bad = {"labelSelector": {"matchExpressions": [expr("app", "In")]}, "topologyKey": "zone"}
    bad_ns = {"labelSelector": {}, "namespaceSelector": {"matchLabels": {"team": "a b"}}}
    good = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
    spec = {
        "affinity": {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [good, bad, bad]},
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "podAffinityTerm": bad_ns}
                ]
            },
        }
    }
    assert pod_affinity_error(spec) == (
        f"[requiredAffinityTerms: {EMPTY_IN}, preferredAntiAffinityTerms: "
        f'values[0][team]: Invalid value: "a b": {VALUE_RULE}]'
    )
    assert pod_affinity_error({"affinity": {"podAffinity": {}}}) is None


def test_spread_constraint_error_looks_at_one_kind_of_constraint():
    spec = {
        "topologySpreadConstraints": [
            {"whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"a": "b"}}},
            {
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchExpressions": [expr("app", "In")]},
            },
        ]
    }
    assert spread_constraint_error(spec, "DoNotSchedule") is None
    assert spread_constraint_error(spec, "ScheduleAnyway") == EMPTY_IN


def test_spread_constraint_error_reads_the_parsed_selectors_it_is_given():
    constraints = [
        {"whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"a": "b"}}},
        {"whenUnsatisfiable": "DoNotSchedule"},
        {
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchExpressions": [expr("app", "In")]},
        },
        {
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchExpressions": [expr("app", "Exists", "x")]},
        },
    ]
    spec = {"topologySpreadConstraints": constraints}
    parsed = [parse_selector(c.get("labelSelector")) for c in constraints]
    for kind in ("DoNotSchedule", "ScheduleAnyway"):
        assert spread_constraint_error(spec, kind, parsed) == spread_constraint_error(spec, kind)
    assert spread_constraint_error(spec, "ScheduleAnyway", parsed) == EMPTY_IN
    assert "values set must be empty" in spread_constraint_error(spec, "DoNotSchedule", parsed)


_KEYS = st.sampled_from(["a", "b", "c"])
_VALUES = st.lists(st.sampled_from(["x", "y", "z"]), max_size=2).map(tuple)
_REQUIREMENTS = st.tuples(
    _KEYS, st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Bogus"]), _VALUES
)


@given(
    selector=st.one_of(st.none(), st.lists(_REQUIREMENTS, max_size=3).map(tuple)),
    labels=st.dictionaries(_KEYS, st.sampled_from(["x", "y", "z"])),
)
def test_selector_matches_agrees_with_the_reference(selector, labels):
    expected = reference.Selector(
        None if selector is None else tuple(reference.Requirement(*r) for r in selector)
    ).matches(labels)
    assert selector_matches(selector, labels) is expected


def test_candidates_are_a_copy_the_caller_may_change():
    index = {("app", "web"): {1, 2}, ("app", "db"): {3}}
    found = candidates((("app", "In", ("web",)),), index, range(5))
    assert found == {1, 2}
    found.add(9)
    assert index[("app", "web")] == {1, 2}
    assert candidates((("app", "In", ("web", "db")),), index, range(5)) == {1, 2, 3}
    assert candidates((("app", "Exists", ()),), index, range(3)) == {0, 1, 2}
    assert indexed_candidates((("app", "Exists", ()),), index) is None
    assert indexed_candidates((("app", "In", ("db",)),), index) == {3}


@pytest.mark.parametrize(
    "raw",
    [
        {"matchLabels": {"app": "web"}},
        {"matchLabels": {"app": "web"}, "matchExpressions": []},
        {"matchLabels": {"app": "web", "tier": "db"}},
        {"matchLabels": {"app": "web"}, "matchExpressions": [expr("tier", "Exists")]},
    ],
)
def test_one_label_selectors_parse_as_the_general_path_does(raw):
    pairs = sorted(raw["matchLabels"].items())
    expected = tuple((k, "In", (v,)) for k, v in pairs) + tuple(
        (e["key"], e["operator"], tuple(e.get("values") or ()))
        for e in raw.get("matchExpressions") or ()
    )
    assert parse_selector(raw) == (expected, None)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("app", ""),
        ("app", "a" * 63),
        ("app", "a" * 64),
        ("app", "é"),
        ("app", "-web"),
        ("example.com/app", "web"),
        ("bad key", "web"),
        ("Example.com/app", "web"),
        ("", "web"),
    ],
)
def test_one_label_validation_gives_the_requirements_error(key, value):
    expected = _requirement_error(key, "Equals", (value,))
    raw = {"matchLabels": {key: value}}
    for _ in range(2):  # the second time, from the caches, the same answer
        assert label_selector_error(raw) == expected
        assert parse_selector(raw)[0] == (None if expected else ((key, "In", (value,)),))
