"""Scenario runs end to end at a tiny size on a control plane of their own: a burst
created as Deployments (kube-controller-manager makes the pods), a scale-up from 0, and
churn (open-loop arrivals, each pod deleted once it has lived a while). Every pod is
bound, placements pass the independent check, and nothing is left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesalvo.sched.bench import contenders, harness, report
from kubesalvo.sched.bench.results import BenchResult
from kubesalvo.sched.bench.workload import RUN_LABEL, load_scenario, load_settings
from kubesalvo.sched.cluster import ApiClient, controlplane
from kubesalvo.sched.cluster.controlplane import ControlPlane
from tests.sched.bench.test_harness import _require_binaries

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCENARIO = """\
name: {name}
description: a tiny {name} run
seed: 3
fleet:
  nodes: 30
workloads:
  - shape: replicasets
    pods: 60
    classes: 3
bench:
{bench}
"""


def _run(
    out: Path, name: str, bench: str, schedulers: tuple[str, ...], **extra: object
) -> BenchResult:
    _require_binaries()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.yaml"
    path.write_text(SCENARIO.format(name=name, bench=bench))
    settings = load_settings(str(path))
    options = harness.Options(
        scenario=load_scenario(str(path)),
        schedulers=schedulers,
        dir=out / "control-plane",
        settle=30.0,
        timeout=300.0,
        keep=True,
        die_with_parent=True,
        create=settings.create,
        lifetime=settings.lifetime,
        note=settings.note,
        **extra,  # type: ignore[arg-type]
    )
    try:
        result = harness.run(options, lambda message: None)
        _assert_nothing_left(ControlPlane.load(options.dir))
    finally:
        controlplane.stop(options.dir)
    report.write_json(result, out)
    report.write_markdown(result, out)
    return result


def _assert_nothing_left(cp: ControlPlane) -> None:
    """No run pod, Deployment or Job outlives its run (ReplicaSets go with their
    Deployment in the garbage collector's time)."""

    async def left(client: ApiClient) -> list[object]:
        pods = await client.request("GET", "/api/v1/pods", params={"labelSelector": RUN_LABEL})
        deployments = await client.request("GET", "/apis/apps/v1/deployments")
        jobs = await client.request("GET", "/apis/batch/v1/jobs")
        return pods["items"] + deployments["items"] + jobs["items"]

    assert cp.call(left) == []


@pytest.fixture(scope="module")
def deployments(tmp_path_factory: pytest.TempPathFactory) -> BenchResult:
    out = tmp_path_factory.mktemp("deployments")
    schedulers = (contenders.KUBESALVO, contenders.KUBE_SCHEDULER)
    return _run(out, "deployments", "  create: deployments\n  note: a note", schedulers)


def test_a_burst_created_through_deployments_is_bound_and_owned(deployments: BenchResult) -> None:
    assert deployments.scenario["create"] == "deployments"
    assert deployments.scenario["note"] == "a note"
    for run in deployments.runs:
        assert (run.outcome, run.pods, run.bound) == ("all bound", 60, 60)
        assert run.created_through == {"deployments": 3, "jobs": 0, "bare_pods": 0, "pods": 60}
        assert run.feasibility["checked"] and run.feasibility["ok"], run.feasibility
        assert run.feasibility["pods_checked"] == 60
        # Each pod's creation is when the watch first saw it: never after its bind.
        assert len(run.latencies) == 60 and run.latencies[0] >= 0
        assert len(run.create_times) == 60


def test_scale_up_from_zero_and_churn(tmp_path: Path) -> None:
    result = _run(tmp_path, "scale-up", "  create: scale-up", (contenders.KUBESALVO,))
    (run,) = result.runs
    assert (run.outcome, run.bound) == ("all bound", 60)
    assert run.created_through["deployments"] == 3
    assert run.feasibility["ok"], run.feasibility

    churn = _run(
        tmp_path / "churn",
        "churn",
        "  rate: 20\n  duration: 3\n  lifetime: 1",
        (contenders.KUBESALVO,),
        rate=20.0,
        duration=3.0,
    )
    (run,) = churn.runs
    assert churn.scenario["lifetime_seconds"] == 1.0
    assert (run.mode, run.outcome, run.bound) == ("rate", "all bound", 60)
    # Pods bound more than a second before the check were deleted by then.
    assert run.feasibility["run_pods_found"] < 60
