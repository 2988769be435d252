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
# Verdicts kept (expression x device); beyond that the cache starts over. 8 GPUs on each
# of 10,000 nodes under three expressions fit.
_MAX_VERDICTS = 250_000


class SelectorError(Exception):
    """An expression that does not compile, or fails on a device (the text says which)."""


class Selectors:
    """Compiled expressions by text, and their evaluation on one device."""

    def __init__(self) -> None:
        self._env = cel.NewEnv(variables={"device": cel.Type.DYN})
        self._compiled: dict[str, Any] = {}
        # (expression, driver, id(device)) -> (device, verdict); the device is kept so its
        # id is not reused while the entry lives, and checked by identity: a changed slice
        # is a new object (its devices new dicts), so a verdict never outlives its device.
        self._verdicts: dict[tuple[str, str, int], tuple[Mapping[str, Any], bool]] = {}
        # (expressions, pool, id(slice)) -> (slice, names of the devices all select)
        self._selected: dict[tuple[tuple[str, ...], str, str, int], tuple[Any, tuple[str, ...]]]
        self._selected = {}

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

    def device_matches(self, expression: str, driver: str, device: Mapping[str, Any]) -> bool:
        """``matches`` on the published ``device`` of ``driver``, remembered for as long as
        that device object lives: a pod after pod evaluates each device once, not once a
        pod. Errors are raised each time, never remembered."""
        key = (expression, driver, id(device))
        known = self._verdicts.get(key)
        if known is not None and known[0] is device:
            return known[1]
        verdict = self.matches(expression, device_view(driver, device))
        if len(self._verdicts) >= _MAX_VERDICTS:
            self._verdicts.clear()
        self._verdicts[key] = (device, verdict)
        return verdict

    def selected_devices(
        self, expressions: tuple[str, ...], driver: str, pool: str, slice_: Mapping[str, Any]
    ) -> tuple[str, ...]:
        """The names of the slice's devices that every expression selects, leaving out
        devices with binding conditions or consumed counters (which the allocator does not
        take); remembered while the slice object lives, as ``device_matches``."""
        key = (expressions, driver, pool, id(slice_))
        known = self._selected.get(key)
        if known is not None and known[0] is slice_:
            return known[1]
        names = tuple(
            device.get("name", "")
            for device in (slice_.get("spec") or {}).get("devices") or ()
            if not device.get("bindingConditions")
            and not device.get("consumesCounters")
            and all(self.device_matches(e, driver, device) for e in expressions)
        )
        if len(self._selected) >= _MAX_VERDICTS:
            self._selected.clear()
        self._selected[key] = (slice_, names)
        return names


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
