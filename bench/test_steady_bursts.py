"""bench/steady_bursts.py at a small scale: it places every burst, the class cache changes
no decision (the same digest with and without it), and ``--profile`` writes where the
bursts' time went. Its figures come from the script at 5,000 nodes (bench/RESULTS.md); no
timing is asserted here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SMALL = ["--nodes", "60", "--running", "120", "--bursts", "40", "--min", "2", "--max", "9"]


def _bench():
    spec = importlib.util.spec_from_file_location("steady_bursts", HERE / "steady_bursts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_stream_is_placed_alike_with_and_without_the_class_cache(tmp_path):
    bench = _bench()
    kept = bench.run(bench.parse(SMALL))
    fresh = bench.run(bench.parse([*SMALL, "--no-class-cache"]))
    assert kept["bursts"] == fresh["bursts"] == 40
    assert 80 <= kept["pods"] == fresh["pods"] <= 360
    assert kept["placed"] == kept["pods"]
    assert kept["class_cache"] and not fresh["class_cache"]
    assert kept["digest"] == fresh["digest"]


def test_the_profile_names_the_burst_entry_point(tmp_path):
    bench = _bench()
    out = tmp_path / "profile.txt"
    report = bench.run(bench.parse([*SMALL, "--profile", str(out)]))
    assert report["profiled"]
    assert "place_burst" in out.read_text()
    assert (tmp_path / "profile.txt.prof").stat().st_size > 0


def test_with_the_workloads_the_pods_take_the_default_spread_and_all_are_placed():
    """``--workloads`` gives the bursts their ReplicaSets, as the runtime does: the pods
    then spread by the default constraints, so their nodes differ from the spread-free
    stream's, and the class cache still changes no decision."""
    bench = _bench()
    plain = bench.run(bench.parse(SMALL))
    spread = bench.run(bench.parse([*SMALL, "--workloads"]))
    fresh = bench.run(bench.parse([*SMALL, "--workloads", "--no-class-cache"]))
    assert spread["workloads"] and not plain["workloads"]
    assert spread["placed"] == spread["pods"] == plain["pods"]
    assert spread["digest"] == fresh["digest"] != plain["digest"]


def test_placed_on_the_loop_or_through_the_worker_thread_the_decisions_are_the_same():
    bench = _bench()
    reports = [
        bench.run(bench.parse([*SMALL, "--hand-off", way])) for way in ("none", "loop", "thread")
    ]
    assert [r["hand_off"] for r in reports] == ["none", "loop", "thread"]
    assert len({r["digest"] for r in reports}) == 1
    assert all(r["placed"] == r["pods"] == reports[0]["pods"] for r in reports)
