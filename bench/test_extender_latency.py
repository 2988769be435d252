"""The extender latency benchmark (bench/extender/latency.py) at a small scale: both
servers answer every request in both node-cache modes and let the same nodes pass.

The figures of the issue come from the script itself at 5,000 nodes (see its docstring).
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _latency_module():
    spec = importlib.util.spec_from_file_location(
        "extender_latency", HERE / "extender" / "latency.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kubesalvo_and_the_baseline_agree_and_report_figures():
    results = _latency_module().run
    figures = asyncio.run(results(300, 5))
    assert figures["same nodes pass"] is True
    assert 0 < figures["nodes passing"] < 300
    for server in ("kubesalvo", "baseline"):
        for mode in ("nodeCacheCapable", "full nodes"):
            row = figures[f"{server}, {mode}"]
            assert 0 < row["pair p50"] <= row["pair p99"]
