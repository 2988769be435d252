"""Shared pieces of the speed suites: generated clusters (built once per session), the
plain-Python reference as an in-run baseline, and a closing table of the figures.

Run with ``pytest bench/`` (the unit-test run, ``pytest``, does not collect this folder).
Each test records its figures with ``figures.add(...)``; they are printed at the end of the
run beside their targets, and also land in ``extra_info`` of ``--benchmark-json``.

Saved runs (``--benchmark-save NAME``, ``--benchmark-autosave``) go to ``bench/baselines/``
unless ``--benchmark-storage`` says otherwise, so that a baseline saved on a quiet machine
is committed and a later run compares against it with ``--benchmark-compare``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference.scheduler import ReferenceScheduler
from kubesalvo.core.snapshot import Snapshot
from kubesalvo.core.state import ClusterState
from kubesalvo.core.synthetic import scenario_from_yaml
from kubesalvo.sched.simulate.run import burst_order, load_state

WORKLOADS = Path(__file__).parent / "workloads"
BASELINES = Path(__file__).parent / "baselines"
_DEFAULT_STORAGE = "file://./.benchmarks"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Saved benchmark runs default to the committed ``bench/baselines/`` folder (before
    pytest-benchmark opens its storage)."""
    option = config.option
    if getattr(option, "benchmark_storage", None) == _DEFAULT_STORAGE:
        option.benchmark_storage = f"file://{BASELINES}"


@dataclass
class Cluster:
    snapshot: Snapshot
    state: ClusterState
    burst: list[dict[str, Any]]

    @property
    def workloads(self) -> list[dict[str, Any]]:
        return self.snapshot.workloads


@cache
def cluster(workload: str, owners: bool = False) -> Cluster:
    """The cluster of ``bench/workloads/<workload>.yaml``, generated and loaded once; with
    ``owners`` its ReplicaSet-like pods are owned by ReplicaSets (default spreading applies)."""
    path = WORKLOADS / f"{workload}.yaml"
    snapshot = scenario_from_yaml(path.read_text(), str(path)).generate(owners=owners)
    burst, _ = burst_order(snapshot)
    return Cluster(snapshot, load_state(snapshot), burst)


def reference_seconds_per_pod(
    snapshot: Snapshot, burst: list[dict[str, Any]], count: int, profile: Profile | None = None
) -> float:
    """Per-pod time of the plain-Python reference on the first ``count`` non-gang pods of
    the burst, with every node considered (its snapshot is built outside the timing)."""
    pods = [pod for pod in burst if gang.group_of(pod) is None][:count]
    reference = ReferenceScheduler(
        snapshot.nodes,
        snapshot.bound_pods(),
        snapshot.namespaces,
        profile,
        workloads=snapshot.workloads,
    )
    began = time.process_time()
    reference.place_burst(pods)
    return (time.process_time() - began) / len(pods)


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    target: str = ""
    baseline: str = ""  # the ratio against the in-run baseline, when there is one


@dataclass
class Figures:
    rows: list[Figure] = field(default_factory=list)

    def add(self, name: str, value: float, unit: str, target: str = "", baseline: str = "") -> None:
        self.rows.append(Figure(name, value, unit, target, baseline))


_FIGURES = Figures()


# The helpers as fixtures: with --import-mode=importlib the suites cannot import conftest.
@pytest.fixture
def clusters():
    return cluster


@pytest.fixture
def reference_per_pod():
    return reference_seconds_per_pod


@pytest.fixture
def workloads() -> Path:
    return WORKLOADS


@pytest.fixture
def figures(benchmark) -> Iterator[Figures]:
    """Collects a test's figures for the closing table and its benchmark's extra_info."""
    start = len(_FIGURES.rows)
    yield _FIGURES
    for figure in _FIGURES.rows[start:]:
        benchmark.extra_info[figure.name] = figure.value


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not _FIGURES.rows:
        return
    write = terminalreporter.write_line
    terminalreporter.section("kubesalvo speed figures")
    for f in _FIGURES.rows:
        line = f"{f.name:<58} {f.value:>16,.1f} {f.unit:<12}"
        if f.target:
            line += f" target {f.target}"
        if f.baseline:
            line += f"  [{f.baseline}]"
        write(line)
