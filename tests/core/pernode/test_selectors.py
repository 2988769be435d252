"""Selector semantics: nil versus empty selectors, Go integers, node selector terms."""

import pytest

from kubesalvo.core.pernode.selectors import (
    EVERYTHING,
    NOTHING,
    InvalidSelector,
    label_selector,
    node_selector_terms,
    parse_go_int,
    preferred_terms,
    selector_from_set,
)


def test_a_missing_selector_matches_nothing_and_an_empty_one_everything():
    assert label_selector(None) == NOTHING and not NOTHING.matches({})
    assert label_selector({}) == EVERYTHING and EVERYTHING.matches({"a": "b"})
    assert EVERYTHING.empty and not NOTHING.empty
    assert selector_from_set({}).empty


def test_match_labels_and_expressions_are_anded():
    s = label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}],
        }
    )
    assert s.matches({"app": "web"})
    assert s.matches({"app": "web", "tier": "front"})
    assert not s.matches({"app": "web", "tier": "db"})
    assert not s.matches({"tier": "front"})


@pytest.mark.parametrize(
    "expression",
    [
        {"key": "a", "operator": "In", "values": []},
        {"key": "a", "operator": "Exists", "values": ["x"]},
        {"key": "a", "operator": "Gt", "values": ["1"]},  # not a label selector operator
        {"key": "a", "operator": "Equals", "values": ["1"]},
    ],
)
def test_malformed_label_selectors_are_refused(expression):
    with pytest.raises(InvalidSelector):
        label_selector({"matchExpressions": [expression]})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        ("-7", -7),
        ("+7", 7),
        ("007", 7),
        ("9223372036854775807", (1 << 63) - 1),
        ("9223372036854775808", None),
        ("1_000", None),
        (" 1", None),
        ("1.0", None),
        ("", None),
        ("0x10", None),
    ],
)
def test_go_integers(text, expected):
    assert parse_go_int(text) == expected


def node(name, **labels):
    return {"metadata": {"name": name, "labels": labels}}


def test_node_selector_terms_drop_empty_terms_and_keep_invalid_ones_unmatched():
    terms = node_selector_terms(
        {
            "nodeSelectorTerms": [
                {},
                {"matchExpressions": [{"key": "n", "operator": "Lt", "values": ["x"]}]},
                {"matchExpressions": [{"key": "n", "operator": "Lt", "values": ["10"]}]},
            ]
        }
    )
    assert len(terms) == 2
    assert not terms[0].valid and not terms[0].matches(node("a", n="1"))
    assert terms[1].matches(node("a", n="1")) and not terms[1].matches(node("a", n="x"))


def test_match_fields_compare_the_node_name():
    (term,) = node_selector_terms(
        {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["b"]}]}
            ]
        }
    )
    assert term.matches(node("a")) and not term.matches(node("b"))
    (bad,) = node_selector_terms(
        {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}
            ]
        }
    )
    assert not bad.valid


def test_preferred_terms_drop_zero_weights_and_refuse_invalid_terms():
    ok = {"matchExpressions": [{"key": "a", "operator": "Exists"}]}
    assert [
        w
        for w, _ in preferred_terms(
            [{"weight": 0, "preference": ok}, {"weight": 3, "preference": ok}]
        )
    ] == [3]
    with pytest.raises(InvalidSelector):
        preferred_terms(
            [{"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Foo"}]}}]
        )
