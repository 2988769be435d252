"""ConfigError: why a KubeSchedulerConfiguration file was refused, field by field.

Each problem is a :class:`FieldError` that names the field path the way kube-scheduler's
validation does (``profiles[0].plugins.score.enabled[2].name``) and, where the set of
valid values is closed, lists them. The texts follow apimachinery's ``field.Error``
(``Invalid value``, ``Unsupported value``, ``Required value``, ``Duplicate value``,
``Forbidden``), so an operator who knows kube-scheduler's messages recognises them.
The command line prints ``str(error)`` and exits with code 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# One field error type for the whole configuration: the plugins' args models report theirs
# with it too.
from kubesalvo.core.plugins.framework import ErrorKind, FieldError

__all__ = ["ConfigError", "ErrorKind", "FieldError"]


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
