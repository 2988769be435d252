"""The ``stateful`` scenario end to end at a tiny size on a control plane of its own: each
contender gets volumes and claims of its own, every pod is bound on the node holding the
volume its claim was bound to (read back from the API server), and the run's storage is
deleted with its pods."""

from __future__ import annotations

import pytest

from kubesalvo.sched.bench import contenders, harness
from kubesalvo.sched.bench.results import BenchResult
from kubesalvo.sched.bench.workload import RUN_LABEL, load_scenario
from kubesalvo.sched.cluster import ApiClient, controlplane
from kubesalvo.sched.cluster.controlplane import ControlPlane
from tests.sched.bench.test_harness import _require_binaries

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NODES, PODS = 12, 24  # two local volumes a node: one for every pod


@pytest.fixture(scope="module")
def stateful(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchResult, list[dict]]:
    _require_binaries()
    out = tmp_path_factory.mktemp("stateful")
    options = harness.Options(
        scenario=load_scenario("stateful").resized(NODES, PODS),
        schedulers=(contenders.KUBESALVO, contenders.KUBE_SCHEDULER),
        dir=out / "control-plane",
        settle=30.0,
        timeout=300.0,
        keep=True,
        die_with_parent=True,
    )
    try:
        result = harness.run(options, lambda message: None)

        async def left(client: ApiClient) -> list[dict]:
            found = []
            for path in ("/api/v1/persistentvolumeclaims", "/api/v1/persistentvolumes"):
                listing = await client.request("GET", path, params={"labelSelector": RUN_LABEL})
                found.extend(listing["items"])
            return found

        storage_left = ControlPlane.load(options.dir).call(left)
    finally:
        controlplane.stop(options.dir)
    return result, storage_left


def test_every_pod_is_bound_beside_the_volume_its_claim_got(stateful) -> None:
    result, _ = stateful
    assert [run.scheduler for run in result.runs] == ["kubesalvo", "kube-scheduler"]
    for run in result.runs:
        assert (run.outcome, run.pods, run.bound) == ("all bound", PODS, PODS)
        assert run.feasibility["checked"] and run.feasibility["ok"], run.feasibility
        assert run.feasibility["claims_checked"] == PODS


def test_the_runs_volumes_and_claims_go_with_the_run(stateful) -> None:
    _, storage_left = stateful
    # Deleted; a protection finalizer may hold one a moment longer.
    assert all(obj["metadata"].get("deletionTimestamp") for obj in storage_left)
