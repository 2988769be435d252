"""An independent reading of Kubernetes quantity strings, for checking objects in tests.

It shares no code with kubesalvo's own parser (core.resources), so that a test judging the
scheduler's arithmetic does not judge it with the same arithmetic.
"""

from __future__ import annotations

import re
from fractions import Fraction

_SUFFIXES = {
    "": 1,
    "m": Fraction(1, 1000),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")


def parse(text: str | int) -> Fraction:
    """A quantity in base units (cores, bytes, counts), exactly."""
    match = _QUANTITY.match(str(text))
    if match is None:
        raise ValueError(f"not a quantity: {text!r}")
    return Fraction(match.group(1)) * _SUFFIXES[match.group(2) or ""]
