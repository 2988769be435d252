"""A scenario's ``bench.devices`` section: how many GPUs each node publishes and each pod
claims (``sched/bench/devices.py`` builds the objects)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class DeviceSettingsError(ValueError):
    """A ``bench.devices`` section that cannot be used; the message names the field."""


@dataclass(frozen=True)
class DeviceSettings:
    gpus_per_node: int = 8
    gpus_per_pod: int = 1


def parse(section: Any, where: str) -> DeviceSettings:
    """The ``devices`` mapping of a scenario's ``bench`` section."""
    if not isinstance(section, Mapping):
        raise DeviceSettingsError(f"{where}: expected a mapping, got {type(section).__name__}")
    fields = {"gpusPerNode": "gpus_per_node", "gpusPerPod": "gpus_per_pod"}
    values: dict[str, int] = {}
    for key, value in section.items():
        if key not in fields:
            raise DeviceSettingsError(
                f"{where}.{key}: unknown field; accepted: {', '.join(fields)}"
            )
        if type(value) is not int or not 1 <= value <= 128:
            raise DeviceSettingsError(
                f"{where}.{key}: expected an integer from 1 to 128, got {value!r}"
            )
        values[fields[key]] = value
    return DeviceSettings(**values)
