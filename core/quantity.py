"""Kubernetes resource quantities ("500m", "1.5Gi", "2e3") as exact numbers.

This follows apimachinery's ``resource.ParseQuantity`` and the two accessors the
scheduler reads: ``MilliValue`` (cpu) and ``Value`` (everything else).

A quantity is kept as an exact :class:`fractions.Fraction` so that sums of container
requests are rounded once, at the end, as kube-scheduler does (it adds ``Quantity``
values and only then asks for ``MilliValue``/``Value``). Two rounding rules of the
upstream type are kept:

* parsing rounds a non-zero value away from zero to a multiple of 1n (10^-9), so that
  asking for "some" of a resource never becomes zero;
* a binary-suffixed quantity (``Ki`` ... ``Ei``) larger than 2^63-1 is capped there.

``milli_value`` and ``value`` round away from zero (a ceiling for the positive
quantities that Kubernetes validation allows). A result outside int64 is refused with
``ValueError`` instead of wrapping around as Go's int64 would, because the state
matrices hold int64.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

__all__ = [
    "INT64_MAX",
    "QuantityLike",
    "milli_value",
    "parse_quantity",
    "scaled",
    "value",
]

INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_NANO = Fraction(1, 10**9)

# Suffix -> (base, exponent). The decimal ones are SI prefixes, the binary ones IEC.
_DECIMAL_SUFFIXES: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_MAX_EXPONENT = 1000

QuantityLike = str | int | float | Fraction


def _split(text: str) -> tuple[bool, str, str, str]:
    """Split ``text`` into (positive, integer digits, fraction digits, suffix).

    Mirrors the upstream scanner: an optional sign, digits, an optional ``.`` and
    digits (``1.`` and ``.5`` are accepted), then suffix letters, an optional sign
    and digits (the exponent of ``1e-3``). Anything left over is a format error.
    """
    pos, end = 0, len(text)
    positive = True
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    integer = text[start:pos]
    fraction = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos != end:
        raise ValueError(
            f"quantity {text!r} does not match '^[+-]?[0-9.]+[eEinumkKMGTP]*[-+]?[0-9]*$'"
        )
    return positive, integer, fraction, text[suffix_start:end]


def _interpret_suffix(text: str, suffix: str) -> tuple[int, int, bool]:
    """Return (base, exponent, is_binary) for a suffix, as the upstream suffixer does."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], False
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], True
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = suffix[1:]
        digits = exponent.lstrip("+-")
        if digits and set(digits) <= _DIGITS and len(exponent) - len(digits) <= 1:
            value = int(exponent)
            # Go parses the exponent into an int32; beyond a few hundred the value cannot
            # fit any int64 accessor anyway, so refuse it rather than build a huge number.
            if abs(value) > _MAX_EXPONENT:
                raise ValueError(f"quantity {text!r} has an exponent out of range")
            return 10, value, False
    raise ValueError(f"quantity {text!r} has an unknown suffix {suffix!r}")


def parse_quantity(quantity: QuantityLike) -> Fraction:
    """Return the exact value of a quantity (a string, or a JSON number) as a Fraction."""
    if type(quantity) is str:
        return _parse_text(quantity)
    return _parse(quantity)


def _parse(quantity: QuantityLike) -> Fraction:
    if isinstance(quantity, Fraction):
        return quantity
    if isinstance(quantity, bool):
        raise ValueError(f"quantity must be a string or a number, not {quantity!r}")
    if isinstance(quantity, int):
        return Fraction(quantity)
    if isinstance(quantity, float):
        # The API server keeps a JSON number's text; repr() gives back the shortest text
        # of the float, which is what the client sent for any number written normally.
        text = repr(quantity)
    elif isinstance(quantity, str):
        text = quantity
    else:
        raise ValueError(f"quantity must be a string or a number, not {type(quantity).__name__}")
    if not text:
        raise ValueError("quantity is empty")
    positive, integer, fraction, suffix = _split(text)
    base, exponent, binary = _interpret_suffix(text, suffix)
    mantissa = Fraction(int(integer or "0") * 10 ** len(fraction) + int(fraction or "0"))
    mantissa /= 10 ** len(fraction)
    amount = mantissa * Fraction(base) ** exponent
    if amount % _NANO:
        # Round up to the next nano, as upstream does so that tiny requests stay non-zero.
        amount = (amount // _NANO + 1) * _NANO
    if binary and amount > INT64_MAX:
        amount = Fraction(INT64_MAX)
    return amount if positive else -amount


_parse_text = lru_cache(maxsize=1 << 16)(_parse)


def scaled(amount: Fraction, exponent: int) -> int:
    """Return ``amount / 10**exponent`` rounded away from zero, checked to fit int64."""
    unit = Fraction(10) ** exponent
    quotient = abs(amount) / unit
    whole = quotient.numerator // quotient.denominator
    if whole * quotient.denominator != quotient.numerator:
        whole += 1
    result = whole if amount >= 0 else -whole
    if not _INT64_MIN <= result <= INT64_MAX:
        raise ValueError(f"quantity {amount} does not fit in int64 at scale 10^{exponent}")
    return result


# A cluster repeats a few hundred distinct quantity strings across all its pods and nodes,
# and exact Fraction parsing costs tens of microseconds, so the integer results of strings
# are cached, as are their exact Fractions in parse_quantity (both immutable; errors are
# not cached and are raised again each time).
_CACHE_SIZE = 1 << 16


@lru_cache(maxsize=_CACHE_SIZE)
def _milli_of_text(text: str) -> int:
    return scaled(parse_quantity(text), -3)


@lru_cache(maxsize=_CACHE_SIZE)
def _value_of_text(text: str) -> int:
    return scaled(parse_quantity(text), 0)


def milli_value(quantity: QuantityLike) -> int:
    """Return ``MilliValue()``: the quantity in thousandths, rounded up (cpu millicores)."""
    if type(quantity) is str:
        return _milli_of_text(quantity)
    return scaled(parse_quantity(quantity), -3)


def value(quantity: QuantityLike) -> int:
    """Return ``Value()``: the quantity in whole units, rounded up (bytes, counts)."""
    if type(quantity) is str:
        return _value_of_text(quantity)
    return scaled(parse_quantity(quantity), 0)
