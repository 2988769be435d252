"""Reading a plugin's ``pluginConfig`` args, written by the plugin's module.

Each of kube-scheduler's args kinds has a reader in its plugin's module (``ARGS_READER``,
the spec's ``args_reader``): it checks the document's shape (known fields, types, the
optional ``apiVersion``/``kind``), builds the args model and reports every problem the
model finds with itself at its real path under ``profiles[i].pluginConfig[j].args``. An
args model of plain values needs no reader: :func:`plain_reader` reads each field under its
camelCase name.

The readers are written against :class:`ArgsDecoder` and :class:`ArgsFields`, the
strict, path-aware YAML reading that the config loader implements
(``sched/config/decode.py``): reading never raises on bad input, it records the problem
with its path and a default stands in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterator
from typing import Any, Protocol, TypeVar

from kubesalvo.core.plugins.framework import ArgsError, ErrorKind, FieldError, ResourceSpec

__all__ = [
    "API_VERSION",
    "INT32_MAX",
    "INT64_MAX",
    "ArgsDecoder",
    "ArgsFields",
    "ArgsReader",
    "build",
    "index",
    "open_args",
    "plain_reader",
    "resources",
]

API_VERSION = "kubescheduler.config.k8s.io/v1"
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
A = TypeVar("A")


class Gates(Protocol):
    """The feature gates an args reader may read (``--feature-gates``)."""

    @property
    def storage_capacity_scoring(self) -> bool: ...


class ArgsFields(Protocol):
    """Typed getters over one object's known fields; each records errors at its path."""

    @property
    def path(self) -> str: ...

    def has(self, key: str) -> bool: ...

    def raw(self, key: str) -> Any: ...

    def at(self, key: str) -> str: ...

    def text(self, key: str, default: str = "") -> str: ...

    def opt_text(self, key: str) -> str | None: ...

    def integer(
        self, key: str, default: int | None = None, maximum: int = INT32_MAX
    ) -> int | None: ...

    def number(self, key: str, default: float) -> float: ...

    def flag(self, key: str, default: bool | None = None) -> bool | None: ...

    def duration(self, key: str) -> float | None: ...

    def text_list(self, key: str) -> list[str]: ...


class ArgsDecoder(Protocol):
    """Collects field errors while typed values are read out of a parsed document."""

    @property
    def errors(self) -> list[FieldError]: ...

    @property
    def gates(self) -> Gates: ...

    def fail(
        self,
        path: str,
        kind: ErrorKind,
        value: Any = None,
        detail: str = "",
        accepted: Collection[str] = (),
    ) -> None: ...

    def invalid(self, path: str, value: Any, detail: str) -> None: ...

    def fields(self, raw: Any, path: str, known: Collection[str]) -> ArgsFields: ...

    def items(self, raw: Any, path: str) -> Iterator[tuple[Any, str]]: ...


# (decoder, the args document, its path) -> the plugin's args model
ArgsReader = Callable[[ArgsDecoder, Any, str], Any]


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def build(d: ArgsDecoder, path: str, make: Callable[[], A], default: A) -> A:
    """The model ``make`` builds, or, when it refuses itself, ``default`` with every
    problem it found reported below ``path``."""
    try:
        return make()
    except ArgsError as err:
        for problem in err.problems:
            d.errors.append(problem.under(path))
        return default


def open_args(
    d: ArgsDecoder, raw: Any, path: str, plugin: str, known: tuple[str, ...]
) -> ArgsFields:
    """Open an args object; its optional apiVersion/kind must name this plugin's args."""
    f = d.fields(raw, path, ("apiVersion", "kind", *known))
    api_version = f.opt_text("apiVersion")
    if api_version is not None and api_version != API_VERSION:
        d.fail(f.at("apiVersion"), ErrorKind.UNSUPPORTED, api_version, accepted=(API_VERSION,))
    kind = f.opt_text("kind")
    if kind is not None and kind != plugin + "Args":
        d.fail(f.at("kind"), ErrorKind.UNSUPPORTED, kind, accepted=(plugin + "Args",))
    return f


def resources(d: ArgsDecoder, f: ArgsFields, key: str) -> list[ResourceSpec]:
    """A list of resources with weights (NodeResourcesFit, BalancedAllocation)."""
    out: list[ResourceSpec] = []
    for item, p in d.items(f.raw(key), f.at(key)):
        rf = d.fields(item, p, ("name", "weight"))
        # An unset or zero weight means 1, as in kube-scheduler's defaulting.
        out.append(ResourceSpec(rf.text("name"), rf.integer("weight", 0, INT64_MAX) or 1))
    return out


def plain_reader(plugin: str, model: type) -> ArgsReader:
    """A reader for a plugin's args model whose fields are all plain values (text, integer,
    number, flag, a list of texts held as a tuple): each field is read under its camelCase
    name, e.g. ``label`` or ``bindTimeoutSeconds``."""
    kinds = {f.name: f.type for f in dataclasses.fields(model)}
    # A model may spell a field's key itself (``defaultSLO``, not ``defaultSlo``).
    spelled = getattr(model, "FIELD_KEYS", {})
    keys = {spelled.get(name) or _camel(name): name for name in kinds}

    def read(d: ArgsDecoder, raw: Any, path: str) -> Any:
        f = open_args(d, raw, path, plugin, tuple(keys))
        values: dict[str, Any] = {}
        for key, name in keys.items():
            if not f.has(key):
                continue
            kind = getattr(kinds[name], "__name__", str(kinds[name]))
            if kind == "str":
                values[name] = f.text(key)
            elif kind == "int":
                values[name] = f.integer(key, maximum=INT64_MAX)
            elif kind == "float":
                values[name] = f.number(key, 0.0)
            elif kind == "bool":
                values[name] = f.flag(key)
            elif kind == "tuple[str, ...]":
                values[name] = tuple(f.text_list(key))
        values = {k: v for k, v in values.items() if v is not None}
        return build(d, path, lambda: model(**values), model())

    return read


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)
