"""ConfigError: why a KubeSchedulerConfiguration file was refused, field by field.

Each problem is a :class:`FieldError` that names the field path the way kube-scheduler's
validation does (``profiles[0].plugins.score.enabled[2].name``) and, where the set of
valid values is closed, lists them. The texts follow apimachinery's ``field.Error``
(``Invalid value``, ``Unsupported value``, ``Required value``, ``Duplicate value``,
``Forbidden``), so an operator who knows kube-scheduler's messages recognises them.
The command line prints ``str(error)`` and exits with code 2.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["ConfigError", "ErrorKind", "FieldError"]


class ErrorKind(Enum):
    """The kinds of field error, with apimachinery's wording."""

    INVALID = "Invalid value"
    UNSUPPORTED = "Unsupported value"
    REQUIRED = "Required value"
    DUPLICATE = "Duplicate value"
    FORBIDDEN = "Forbidden"
    UNKNOWN_FIELD = "Unknown field"


def _render(value: Any) -> str:
    # Go's field errors quote strings and print numbers bare; JSON does the same.
    try:
        return json.dumps(value, sort_keys=True)
    except TypeError:
        return repr(value)


@dataclass(frozen=True)
class FieldError:
    """One refused field: where it is, what kind of problem, and what would be accepted."""

    path: str
    kind: ErrorKind
    value: Any = None
    detail: str = ""
    accepted: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = self.path or "<root>"
        if self.kind is ErrorKind.REQUIRED or self.kind is ErrorKind.FORBIDDEN:
            text = f"{where}: {self.kind.value}"
        else:
            text = f"{where}: {self.kind.value}: {_render(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        if self.accepted:
            label = (
                "supported fields" if self.kind is ErrorKind.UNKNOWN_FIELD else "supported values"
            )
            text += f": {label}: " + ", ".join(_render(a) for a in self.accepted)
        return text


@dataclass
class ConfigError(Exception):
    """A configuration that kubesalvo refuses to start with; holds every problem found."""

    errors: list[FieldError] = field(default_factory=list)
    source: str = ""

    def __post_init__(self) -> None:
        super().__init__(str(self))

    @property
    def paths(self) -> list[str]:
        return [e.path for e in self.errors]

    def __str__(self) -> str:
        head = f"invalid configuration {self.source}" if self.source else "invalid configuration"
        if len(self.errors) == 1:
            return f"{head}: {self.errors[0]}"
        lines = [f"{head}: {len(self.errors)} errors:"]
        lines.extend(f"  - {e}" for e in self.errors)
        return "\n".join(lines)
