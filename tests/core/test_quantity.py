"""Quantity parsing and rounding against apimachinery's documented behaviour."""

from fractions import Fraction

import pytest

from kubesalvo.core.quantity import INT64_MAX, milli_value, parse_quantity, value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", Fraction(0)),
        ("1", Fraction(1)),
        ("500m", Fraction(1, 2)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("1.", Fraction(1)),
        ("1.G", Fraction(10**9)),
        ("007", Fraction(7)),
        ("+2", Fraction(2)),
        ("-2", Fraction(-2)),
        ("1k", Fraction(1000)),
        ("1M", Fraction(10**6)),
        ("1G", Fraction(10**9)),
        ("1T", Fraction(10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),
        ("1Ki", Fraction(1024)),
        ("1.5Gi", Fraction(3 << 29)),
        ("1Ti", Fraction(1 << 40)),
        ("1Pi", Fraction(1 << 50)),
        ("1Ei", Fraction(1 << 60)),
        ("100u", Fraction(1, 10**4)),
        ("5n", Fraction(5, 10**9)),
        ("2e3", Fraction(2000)),
        ("2E3", Fraction(2000)),
        ("1e-3", Fraction(1, 1000)),
        ("1e+3", Fraction(1000)),
    ],
)
def test_parses_suffixes_fractions_and_exponents(text, expected):
    assert parse_quantity(text) == expected


def test_a_value_finer_than_a_nano_rounds_up_to_one_nano():
    assert parse_quantity("0.0000000001") == Fraction(1, 10**9)
    assert parse_quantity("1.0000000001") == 1 + Fraction(1, 10**9)


def test_binary_quantities_are_capped_at_int64_max():
    assert parse_quantity("9Ei") == INT64_MAX
    assert value("16Ei") == INT64_MAX


def test_json_numbers_are_accepted():
    assert parse_quantity(3) == 3
    assert parse_quantity(0.5) == Fraction(1, 2)
    assert milli_value(0.25) == 250


def test_milli_value_rounds_up():
    assert milli_value("100m") == 100
    assert milli_value("0.5m") == 1
    assert milli_value("1n") == 1
    assert milli_value("2") == 2000
    assert milli_value("1.0001") == 1001


def test_value_rounds_up():
    assert value("1500m") == 2
    assert value("1") == 1
    assert value("100Mi") == 100 * 1024 * 1024
    assert value("1n") == 1


def test_negative_values_round_away_from_zero():
    assert value("-1500m") == -2
    assert milli_value("-0.5m") == -1


@pytest.mark.parametrize(
    "text", ["", " 1", "1 ", "abc", "1mi", "1e", "1ee3", "1.2.3", "1Ki3", "1Kb", "1,5"]
)
def test_malformed_quantities_raise_value_error(text):
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(text)


@pytest.mark.parametrize("text", ["+", "-", ".", "e3", "Ki"])
def test_texts_without_digits_parse_as_zero_as_upstream_does(text):
    assert parse_quantity(text) == 0


def test_results_beyond_int64_are_refused():
    with pytest.raises(ValueError, match="int64"):
        value("10E")
    with pytest.raises(ValueError, match="int64"):
        milli_value("9Ei")


def test_non_numbers_are_refused():
    with pytest.raises(ValueError):
        parse_quantity(True)
    with pytest.raises(ValueError):
        parse_quantity(None)  # type: ignore[arg-type]


def test_repeated_strings_give_the_same_values_and_errors():
    for _ in range(3):
        assert milli_value("250m") == 250
        assert value("1Gi") == 1 << 30
        with pytest.raises(ValueError):
            value("12 apples")
