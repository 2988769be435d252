"""Strict, path-aware reading of a YAML document into typed values.

kube-scheduler decodes its configuration strictly: a field it does not know, a key given
twice, or a value of the wrong JSON type stops the start. :class:`Decoder` does the same
for kubesalvo while collecting *every* problem with its field path, so that one run
shows all that is wrong with a file instead of the first mistake only. Decoding never
raises on bad input: a bad field is recorded and a default stands in, which lets the
later validation still look at the rest of the file.

Type rules follow Go's ``encoding/json`` as used by sigs.k8s.io/yaml: integers are not
floats, booleans are not integers, strings are not numbers, an integer must fit its Go
width (int32 or int64), and ``null`` means "not set". Durations are strings in Go's
``time.ParseDuration`` syntax ("15s", "1m30s", "1.5h", "300ms"), as ``metav1.Duration``
requires.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

import yaml

from kubesalvo.sched.config.errors import ErrorKind, FieldError
from kubesalvo.sched.config.gates import FeatureGates

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "Decoder",
    "Fields",
    "child",
    "index",
    "parse_duration",
    "safe_load_strict",
]

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

# Go's time.ParseDuration units, in seconds.
_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # U+00B5 micro sign
    "μs": 1e-6,  # U+03BC Greek mu
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_TERM = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)(?![a-zµμ])")
_NUMBER = re.compile(r"\d+\.?\d*|\.\d+")
_UNIT = re.compile(r"[^\d.]+")


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string; ``ValueError`` for anything ParseDuration refuses."""
    s = text
    sign = 1.0
    if s[:1] in ("+", "-"):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _DURATION_TERM.match(s, pos)
        if m is None:
            number = _NUMBER.match(s, pos)
            if number is None:
                raise ValueError(f'time: invalid duration "{text}"')
            unit = _UNIT.match(s, number.end())
            if unit is None:
                raise ValueError(f'time: missing unit in duration "{text}"')
            raise ValueError(f'time: unknown unit "{unit.group()}" in duration "{text}"')
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a mapping key given twice, as strict JSON decoding does."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f'duplicate field "{key}"', key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def safe_load_strict(text: str) -> Any:
    """Parse YAML (or JSON) with safe types only, refusing duplicate keys."""
    return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: safe types only


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


class Decoder:
    """Collects field errors while typed values are read out of a parsed document."""

    def __init__(self, gates: FeatureGates | None = None) -> None:
        self.errors: list[FieldError] = []
        # The feature gates some args read (``--feature-gates``; v1.34's defaults if None).
        self.gates = gates or FeatureGates()

    def fail(
        self,
        path: str,
        kind: ErrorKind,
        value: Any = None,
        detail: str = "",
        accepted: Collection[str] = (),
    ) -> None:
        self.errors.append(FieldError(path, kind, value, detail, tuple(accepted)))

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.fail(path, ErrorKind.INVALID, value, detail)

    def wrong_type(self, path: str, value: Any, want: str) -> None:
        self.invalid(path, value, f"must be of type {want}, not {_type_name(value)}")

    def fields(self, raw: Any, path: str, known: Collection[str]) -> Fields:
        """A view of an object that refuses fields outside ``known``."""
        if raw is None:
            return Fields(self, {}, path)
        if not isinstance(raw, Mapping):
            self.wrong_type(path, raw, "object")
            return Fields(self, {}, path)
        for key in raw:
            if key not in known:
                self.fail(
                    child(path, str(key)),
                    ErrorKind.UNKNOWN_FIELD,
                    key,
                    accepted=sorted(known),
                )
        return Fields(self, {k: v for k, v in raw.items() if k in known}, path)

    def items(self, raw: Any, path: str) -> Iterator[tuple[Any, str]]:
        """The elements of a list with their paths; null is an empty list."""
        if raw is None:
            return
        if not isinstance(raw, list):
            self.wrong_type(path, raw, "array")
            return
        for i, item in enumerate(raw):
            yield item, index(path, i)

    def string(self, raw: Any, path: str) -> str | None:
        if isinstance(raw, str):
            return raw
        self.wrong_type(path, raw, "string")
        return None

    def integer(self, raw: Any, path: str, maximum: int = INT32_MAX) -> int | None:
        if isinstance(raw, bool) or not isinstance(raw, int):
            self.wrong_type(path, raw, "integer")
            return None
        if not -maximum - 1 <= raw <= maximum:
            width = 32 if maximum == INT32_MAX else 64
            self.invalid(path, raw, f"does not fit a {width}-bit integer")
            return None
        return raw


class Fields:
    """Typed getters over one object's known fields; each records errors at its path."""

    def __init__(self, decoder: Decoder, raw: Mapping[str, Any], path: str) -> None:
        self._d = decoder
        self._raw = raw
        self.path = path

    def has(self, key: str) -> bool:
        return self._raw.get(key) is not None

    def raw(self, key: str) -> Any:
        return self._raw.get(key)

    def at(self, key: str) -> str:
        return child(self.path, key)

    def text(self, key: str, default: str = "") -> str:
        raw = self._raw.get(key)
        if raw is None:
            return default
        value = self._d.string(raw, self.at(key))
        return default if value is None else value

    def opt_text(self, key: str) -> str | None:
        raw = self._raw.get(key)
        return None if raw is None else self._d.string(raw, self.at(key))

    def integer(self, key: str, default: int | None = None, maximum: int = INT32_MAX) -> int | None:
        raw = self._raw.get(key)
        if raw is None:
            return default
        value = self._d.integer(raw, self.at(key), maximum)
        return default if value is None else value

    def number(self, key: str, default: float) -> float:
        raw = self._raw.get(key)
        if raw is None:
            return default
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            self._d.wrong_type(self.at(key), raw, "number")
            return default
        return float(raw)

    def flag(self, key: str, default: bool | None = None) -> bool | None:
        raw = self._raw.get(key)
        if raw is None:
            return default
        if not isinstance(raw, bool):
            self._d.wrong_type(self.at(key), raw, "boolean")
            return default
        return raw

    def duration(self, key: str) -> float | None:
        """Seconds, or None when absent; a non-string or a bad syntax is an error."""
        raw = self._raw.get(key)
        if raw is None:
            return None
        if not isinstance(raw, str):
            self._d.invalid(
                self.at(key), raw, 'must be a duration string such as "15s", "1m30s" or "300ms"'
            )
            return None
        try:
            return parse_duration(raw)
        except ValueError as exc:
            self._d.invalid(
                self.at(key),
                raw,
                f"{exc}; a duration is a sequence of numbers with units ns, us, ms, s, m, h, "
                'such as "15s", "1m30s" or "300ms"',
            )
            return None

    def text_list(self, key: str) -> list[str]:
        out: list[str] = []
        for item, path in self._d.items(self._raw.get(key), self.at(key)):
            value = self._d.string(item, path)
            if value is not None:
                out.append(value)
        return out
