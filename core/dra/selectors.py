"""CEL device selectors (DeviceClass and request ``selectors``), through the CEL project's
own runtime (cel-expr-python).

Each distinct expression is compiled once and kept (a cluster has few classes and
requests, so few expressions); a compile error is kept too and given again. The device
the expression sees is ``device.driver``, ``device.attributes[domain][name]`` and
``device.capacity[domain][name]``: an attribute published without a domain belongs to its
driver's domain, as in kube-scheduler. Capacities are given as their quantity strings:
the Kubernetes ``quantity()`` library is not available in this runtime, so an expression
calling it fails to compile and that error becomes the claim's reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cel_expr_python import cel

__all__ = ["SelectorError", "Selectors", "device_view"]

_VALUE_KINDS = ("string", "int", "bool", "version")
_MAX_CACHED = 1024  # distinct expressions kept; beyond that the cache starts over


class SelectorError(Exception):
    """An expression that does not compile, or fails on a device (the text says which)."""


class Selectors:
    """Compiled expressions by text, and their evaluation on one device."""

    def __init__(self) -> None:
        self._env = cel.NewEnv(variables={"device": cel.Type.DYN})
        self._compiled: dict[str, Any] = {}

    def _compile(self, expression: str) -> Any:
        compiled = self._compiled.get(expression)
        if compiled is None:
            if len(self._compiled) >= _MAX_CACHED:
                self._compiled.clear()
            try:
                compiled = self._env.compile(expression)
            except RuntimeError as error:
                compiled = SelectorError(str(error))
            self._compiled[expression] = compiled
        return compiled

    def compile_error(self, expression: str) -> str | None:
        """The compile error of ``expression``, or None when it compiles."""
        compiled = self._compile(expression)
        return str(compiled) if isinstance(compiled, SelectorError) else None

    def matches(self, expression: str, device: Mapping[str, Any]) -> bool:
        """Whether the device (``device_view``) satisfies the expression; a compile or
        runtime error, or a result that is not a bool, raises SelectorError."""
        compiled = self._compile(expression)
        if isinstance(compiled, SelectorError):
            raise compiled
        result = compiled.eval(data={"device": device})
        kind = result.type()
        if kind == cel.Type.ERROR:
            raise SelectorError(str(result.value()))
        if kind != cel.Type.BOOL:
            raise SelectorError(f"expression returned {kind}, not bool")
        return bool(result.value())


def device_view(driver: str, device: Mapping[str, Any]) -> dict[str, Any]:
    """The ``device`` variable of a selector for one published device."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("attributes") or {}).items():
        domain, _, short = name.rpartition("/")
        for kind in _VALUE_KINDS:
            if kind in value:
                attributes.setdefault(domain or driver, {})[short] = value[kind]
                break
    capacity: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("capacity") or {}).items():
        domain, _, short = name.rpartition("/")
        capacity.setdefault(domain or driver, {})[short] = str(value.get("value", ""))
    return {"driver": driver, "attributes": attributes, "capacity": capacity}
