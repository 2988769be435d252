"""A scenario's small end-to-end run for the bench tests: kubesalvo and kube-scheduler on
a control plane of their own, and what each run was to delete but left behind."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubesalvo.sched.bench import contenders, harness
from kubesalvo.sched.bench.results import BenchResult
from kubesalvo.sched.bench.workload import RUN_LABEL
from kubesalvo.sched.cluster import ApiClient, controlplane
from kubesalvo.sched.cluster.controlplane import ControlPlane
from tests.sched.bench.test_harness import _require_binaries


def run_both(
    out: Path, scenario: Any, left_at: Sequence[str], **extra: Any
) -> tuple[BenchResult, list[dict]]:
    """Both contenders run ``scenario`` (``extra``: more harness options) on a control
    plane kept under ``out`` until the objects carrying a run's label at the API paths
    ``left_at`` are listed: the run was to delete them with its pods. The control plane
    is stopped whatever fails."""
    _require_binaries()
    options = harness.Options(
        scenario=scenario,
        schedulers=(contenders.KUBESALVO, contenders.KUBE_SCHEDULER),
        dir=out / "control-plane",
        settle=30.0,
        timeout=300.0,
        keep=True,
        die_with_parent=True,
        **extra,
    )
    try:
        result = harness.run(options, lambda message: None)

        async def left(client: ApiClient) -> list[dict]:
            found = []
            for path in left_at:
                listing = await client.request("GET", path, params={"labelSelector": RUN_LABEL})
                found.extend(listing["items"])
            return found

        return result, ControlPlane.load(options.dir).call(left)
    finally:
        controlplane.stop(options.dir)


def assert_all_bound_with_claims_checked(result: BenchResult, pods: int) -> None:
    """Both contenders bound every pod, and the feasibility check read every pod's claim
    back and found it right."""
    assert [run.scheduler for run in result.runs] == ["kubesalvo", "kube-scheduler"]
    for run in result.runs:
        assert (run.outcome, run.pods, run.bound) == ("all bound", pods, pods)
        assert run.feasibility["checked"] and run.feasibility["ok"], run.feasibility
        assert run.feasibility["claims_checked"] == pods
