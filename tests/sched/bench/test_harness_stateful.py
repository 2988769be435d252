"""The ``stateful`` scenario end to end at a tiny size on a control plane of its own: each
contender gets volumes and claims of its own, every pod is bound on the node holding the
volume its claim was bound to (read back from the API server), and the run's storage is
deleted with its pods."""

from __future__ import annotations

import pytest

from kubesalvo.sched.bench.results import BenchResult
from kubesalvo.sched.bench.workload import load_scenario
from tests.sched.bench.harness_runs import assert_all_bound_with_claims_checked, run_both

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NODES, PODS = 12, 24  # two local volumes a node: one for every pod


@pytest.fixture(scope="module")
def stateful(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchResult, list[dict]]:
    return run_both(
        tmp_path_factory.mktemp("stateful"),
        load_scenario("stateful").resized(NODES, PODS),
        ("/api/v1/persistentvolumeclaims", "/api/v1/persistentvolumes"),
    )


def test_every_pod_is_bound_beside_the_volume_its_claim_got(stateful) -> None:
    result, _ = stateful
    assert_all_bound_with_claims_checked(result, PODS)


def test_the_runs_volumes_and_claims_go_with_the_run(stateful) -> None:
    _, storage_left = stateful
    # Deleted; a protection finalizer may hold one a moment longer.
    assert all(obj["metadata"].get("deletionTimestamp") for obj in storage_left)
