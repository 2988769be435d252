"""The import-linter contract keeping production off the tests' oracle covers every module.

import-linter's forbidden contracts name their source modules; a module missing from the
list could import core.reference unnoticed. Every package and module of kubesalvo but
core.reference itself must fall under one of the listed sources (the package roots
kubesalvo.core and kubesalvo.sched excepted: listing kubesalvo.core would list the oracle,
and its __init__ imports nothing).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORACLE = "kubesalvo.core.reference"


def _oracle_contract() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    found = [c for c in contracts if c.get("forbidden_modules") == [ORACLE]]
    assert len(found) == 1
    return found[0]


def _modules() -> list[str]:
    out = []
    for folder in ("core", "sched"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if len(parts) > 1:
                out.append(".".join(("kubesalvo", *parts)))
    return out


def test_every_production_module_is_a_source_of_the_oracle_contract() -> None:
    sources = _oracle_contract()["source_modules"]
    assert isinstance(sources, list)
    uncovered = [
        module
        for module in _modules()
        if not (module == ORACLE or module.startswith(ORACLE + "."))
        and not any(module == s or module.startswith(s + ".") for s in sources)
    ]
    assert uncovered == []


def test_the_oracle_contract_has_no_exceptions() -> None:
    contract = _oracle_contract()
    assert "ignore_imports" not in contract
    assert ORACLE not in contract["source_modules"]  # type: ignore[operator]


def test_only_three_kernel_and_volume_modules_still_import_the_gangs_old_address() -> None:
    # core/gang.py re-exports Coscheduling's gang module for these alone (see its docstring).
    pattern = re.compile(r"from kubesalvo\.core import [^\n]*\bgang\b|kubesalvo\.core\.gang\b")
    importers = sorted(
        path.relative_to(ROOT).as_posix()
        for folder in ("core", "sched", "tests", "bench")
        for path in (ROOT / folder).rglob("*.py")
        if pattern.search(path.read_text()) and path.name != "test_import_contracts.py"
    )
    assert importers == ["core/place.py", "core/volume_burst.py", "core/volume_slots.py"]
