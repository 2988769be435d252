"""The import-linter contracts cover every module, so a new one cannot slip past them.

import-linter's contracts name their modules; a module missing from the lists could import
core.reference, or a runtime module a tool, unnoticed. Every package and module of
kubesalvo but core.reference itself must fall under one of the oracle contract's sources
(the package roots kubesalvo.core and kubesalvo.sched excepted: listing kubesalvo.core would
list the oracle, and its __init__ imports nothing); every module of kubesalvo.sched must be
in a layer of the runtime's contract or of the tools' one, and the runtime's are the
sources of the contract forbidding the tools.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORACLE = "kubesalvo.core.reference"


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    assert isinstance(contracts, list)
    return contracts


def _oracle_contract() -> dict[str, object]:
    found = [c for c in _contracts() if c.get("forbidden_modules") == [ORACLE]]
    assert len(found) == 1
    return found[0]


def _named(contract_name: str) -> dict[str, object]:
    found = [c for c in _contracts() if str(c["name"]).startswith(contract_name)]
    assert len(found) == 1, contract_name
    return found[0]


def _layer_modules(contract: dict[str, object]) -> list[str]:
    layers = contract["layers"]
    assert isinstance(layers, list)
    return [m.strip() for layer in layers for m in re.split(r"[|:]", layer)]


def _covered(module: str, listed: list[str]) -> bool:
    return any(module == s or module.startswith(s + ".") for s in listed)


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


def test_nothing_imports_the_gangs_old_address() -> None:
    # Coscheduling's group reading lives in core/plugins/coscheduling/gang.py alone.
    assert not (ROOT / "core" / "gang.py").exists()
    pattern = re.compile(r"from kubesalvo\.core import [^\n]*\bgang\b|kubesalvo\.core\.gang\b")
    importers = sorted(
        path.relative_to(ROOT).as_posix()
        for folder in ("core", "sched", "tests", "bench")
        for path in (ROOT / folder).rglob("*.py")
        if pattern.search(path.read_text()) and path.name != "test_import_contracts.py"
    )
    assert importers == []


RUNTIME = "the runtime's layers"
TOOLS = "the command line > the programs and tools"
NO_TOOLS = "the runtime never imports the tools"


def test_every_sched_module_is_in_a_layer_of_the_runtime_or_of_the_tools() -> None:
    layered = _layer_modules(_named(RUNTIME)) + _layer_modules(_named(TOOLS))
    sched = [m for m in _modules() if m.startswith("kubesalvo.sched.")]
    assert [m for m in sched if not _covered(m, layered)] == []


def test_the_runtimes_layers_are_what_may_not_import_the_tools() -> None:
    runtime = _layer_modules(_named(RUNTIME))
    tools = [m for m in _layer_modules(_named(TOOLS)) if m not in runtime]
    contract = _named(NO_TOOLS)
    assert sorted(contract["source_modules"]) == sorted(runtime)  # type: ignore[arg-type]
    assert sorted(contract["forbidden_modules"]) == sorted(tools)  # type: ignore[arg-type]
