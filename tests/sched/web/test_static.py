"""The web view's files: every file the pages load is one the view serves, every served
file is in the package's static/ folder, and setup.py declares that folder as package
data, so that ``pip install .`` ships what ``pip install -e .`` reads from the tree."""

from __future__ import annotations

import ast
import fnmatch
import re
from importlib import resources
from pathlib import Path

from kubesalvo.sched.web.view import STATIC

ROOT = Path(__file__).resolve().parents[3]
FOLDER = resources.files("kubesalvo.sched.web") / "static"


def test_every_file_a_page_loads_is_served_and_present():
    for page in ("index.html", "pod.html"):
        html = (FOLDER / page).read_text()
        loaded = re.findall(r'(?:src|href)="static/([^"]+)"', html)
        assert loaded, page
        for name in loaded:
            assert name in STATIC, f"{page} loads static/{name}, which the view does not serve"
    for name in STATIC:
        assert (FOLDER / name).is_file(), name


def test_nothing_is_loaded_from_another_host():
    for entry in FOLDER.iterdir():
        text = entry.read_text()
        assert not re.search(r'(?:src|href)="(?:https?:)?//', text), entry.name
        assert "@import" not in text and "url(http" not in text, entry.name


def _package_data() -> dict[str, list[str]]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "package_data":
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py declares no package_data")


def test_setup_declares_every_static_file_as_package_data():
    patterns = _package_data()["kubesalvo.sched.web"]
    for entry in FOLDER.iterdir():
        relative = f"static/{entry.name}"
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), relative
