"""Feature gates: kube-scheduler's ``--feature-gates`` flag, for the gates kubesalvo models.

The flag's syntax and error texts are component-base's: ``Name=bool,Name=bool``, empty
items skipped, names and values trimmed, a value Go's ``strconv.ParseBool`` reads
(``1 t T TRUE true True 0 f F FALSE false False``).

kubesalvo models kube-scheduler v1.34's defaults, so a gate is off unless the flag turns
it on. The gates it models:

* ``StorageCapacityScoring`` (alpha, off in v1.34; beta, on in v1.37): VolumeBinding
  scores nodes by the capacity its claims would use there, and its args accept ``shape``
  (``core/plugins/volume_binding.py``: its args reader and its model).

Every other gate name is refused at start, with the list of those kubesalvo knows, even
one that would not change a decision: kubesalvo cannot vouch that a gate it has not read
leaves its placements as kube-scheduler's with that gate set.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

__all__ = [
    "FLAG_HELP",
    "KNOWN",
    "STORAGE_CAPACITY_SCORING",
    "FeatureGateError",
    "FeatureGates",
    "flag_type",
    "parse",
]

STORAGE_CAPACITY_SCORING = "StorageCapacityScoring"
# Each gate kubesalvo models, with its v1.34 default.
KNOWN = {STORAGE_CAPACITY_SCORING: False}

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value kube-scheduler (or kubesalvo) refuses."""


@dataclass(frozen=True)
class FeatureGates:
    """The gates' values (v1.34's defaults unless set)."""

    storage_capacity_scoring: bool = KNOWN[STORAGE_CAPACITY_SCORING]


def parse(value: str) -> FeatureGates:
    """The gates a ``--feature-gates`` value sets (later items win, as in a map)."""
    found: dict[str, bool] = {}
    for item in value.split(","):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        raw = raw.strip()
        if raw in _TRUE:
            found[name] = True
        elif raw in _FALSE:
            found[name] = False
        else:
            raise FeatureGateError(
                f'invalid value of {name}={raw}, err: strconv.ParseBool: parsing "{raw}": '
                "invalid syntax"
            )
    unknown = sorted(name for name in found if name not in KNOWN)
    if unknown:
        raise FeatureGateError(
            "; ".join(f"unrecognized feature gate: {name}" for name in unknown)
            + f" (kubesalvo models only: {', '.join(sorted(KNOWN))})"
        )
    return FeatureGates(
        storage_capacity_scoring=found.get(
            STORAGE_CAPACITY_SCORING, FeatureGates().storage_capacity_scoring
        )
    )


def flag_type(value: str) -> FeatureGates:
    """``parse`` for argparse: its error becomes the flag's, as pflag words it."""
    try:
        return parse(value)
    except FeatureGateError as error:
        raise argparse.ArgumentTypeError(
            f'invalid argument "{value}" for "--feature-gates" flag: {error}'
        ) from error


FLAG_HELP = (
    "kube-scheduler's feature gates, Name=true|false,...; kubesalvo models "
    + ", ".join(sorted(KNOWN))
    + " (off by default, as in v1.34)"
)
