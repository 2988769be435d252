"""Helpers of the hostile-input tests: run a ``kubesalvo`` command in-process as its console
script would, and mutate a valid document at one path.

``run_cli(argv)`` calls the real entry point (``kubesalvo.sched.cli.main``) with its
output captured; an exception that escapes it is what a user would see as a traceback,
so it is returned as a failure instead of raised. ``paths(document)`` lists every path of
a parsed YAML/JSON document, and ``replaced``/``removed`` give a copy with one path
changed, so that a test can walk every field of a configuration or a scenario.
"""

from __future__ import annotations

import contextlib
import copy
import io
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from kubesalvo.sched import cli

Path = tuple[str | int, ...]


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    # The traceback of an exception that escaped the entry point ("" if none did).
    crash: str = ""


def run_cli(argv: Sequence[str]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException:
            return Outcome(-1, out.getvalue(), err.getvalue(), traceback.format_exc())
    return Outcome(code, out.getvalue(), err.getvalue())


def paths(document: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every path below the root of ``document`` (objects and arrays included)."""
    if isinstance(document, dict):
        items: Any = document.items()
    elif isinstance(document, list):
        items = enumerate(document)
    else:
        return
    for key, value in items:
        yield (*prefix, key)
        yield from paths(value, (*prefix, key))


def get(document: Any, path: Path) -> Any:
    for key in path:
        document = document[key]
    return document


def replaced(document: Any, path: Path, value: Any) -> Any:
    out = copy.deepcopy(document)
    get(out, path[:-1])[path[-1]] = value
    return out


def removed(document: Any, path: Path) -> Any:
    out = copy.deepcopy(document)
    del get(out, path[:-1])[path[-1]]
    return out


def field_path(path: Path) -> str:
    """A path as kube-scheduler's field errors write it: ``profiles[0].plugins.score``."""
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


def json_class(value: Any) -> str:
    """The JSON type of a parsed value, integers apart from other numbers (``int``,
    ``float``, ``bool``, ``str``, ``list``, ``dict`` or ``null``)."""
    return "null" if value is None else type(value).__name__


def no_traceback(outcome: Outcome) -> None:
    assert not outcome.crash, outcome.crash
    assert "Traceback (most recent call last)" not in outcome.stderr + outcome.stdout, (
        outcome.stderr
    )
