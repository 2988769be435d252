"""The ``reliability`` suite: full-scale runs (10,000 pods onto 1,000 nodes, control-plane
restarts mid-burst, a 30-minute soak; 1,000,000 pods onto 100,000 nodes in ``kubesalvo
simulate``) that a default ``python3 -m pytest`` leaves out.
They run when the marker expression names them: ``python3 -m pytest -m reliability``.
Each of them also runs at small scale in the default suite."""

from __future__ import annotations

import pytest

# ``kubesalvo run`` in a subprocess, as tests/sched/test_app.py starts it.
from tests.sched.test_app import scheduler  # noqa: F401


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "reliability" in (config.option.markexpr or ""):
        return
    left_out = [item for item in items if item.get_closest_marker("reliability")]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if not item.get_closest_marker("reliability")]
