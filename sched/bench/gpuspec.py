"""A scenario's ``bench.gpu`` section: how many devices each node publishes and each pod's
claim asks (``sched/bench/gpus.py`` makes the objects)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class GpuSettingsError(ValueError):
    """A ``bench.gpu`` field out of range."""


@dataclass(frozen=True)
class GpuSettings:
    """``bench.gpu``: devices published on every node, devices each pod's claim asks."""

    per_node: int = 8
    per_pod: int = 1


def parse(section: Any, where: str) -> GpuSettings:
    """``GpuSettings`` from a scenario's ``bench.gpu`` mapping (``devicesPerNode``,
    ``devicesPerPod``); raises GpuSettingsError naming the field at fault."""
    if section is None:
        section = {}
    if not isinstance(section, dict):
        raise GpuSettingsError(f"{where}: expected a mapping, got {type(section).__name__}")
    fields = {"devicesPerNode": "per_node", "devicesPerPod": "per_pod"}
    values: dict[str, int] = {}
    for key, value in section.items():
        if key not in fields:
            raise GpuSettingsError(f"{where}.{key}: unknown field; accepted: {', '.join(fields)}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise GpuSettingsError(f"{where}.{key}: expected an integer >= 1, got {value!r}")
        values[fields[key]] = value
    settings = GpuSettings(**values)
    if settings.per_pod > settings.per_node:
        raise GpuSettingsError(
            f"{where}.devicesPerPod: {settings.per_pod} is more than a node's "
            f"{settings.per_node} devices"
        )
    return settings
