"""The ``gpu`` scenario end to end at a tiny size on a control plane of its own: each
contender gets a DRA driver of its own (GPUs published per node, a claim template per pod
class), every pod is bound with its claim allocated a GPU of its node, read back from the
API server, and the run's driver objects are deleted with its pods."""

from __future__ import annotations

import pytest

from kubesalvo.sched.bench.devices import PATH
from kubesalvo.sched.bench.results import BenchResult
from kubesalvo.sched.bench.workload import load_scenario, load_settings
from tests.sched.bench.harness_runs import assert_all_bound_with_claims_checked, run_both

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NODES, PODS = 6, 30  # 48 GPUs


@pytest.fixture(scope="module")
def gpu(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchResult, list[dict]]:
    settings = load_settings("gpu")
    assert settings.devices is not None and settings.devices.gpus_per_pod == 1
    kinds = ("resourceslices", "resourceclaimtemplates", "deviceclasses")
    return run_both(
        tmp_path_factory.mktemp("gpu"),
        load_scenario("gpu").resized(NODES, PODS),
        [f"{PATH}/{kind}" for kind in kinds],
        devices=settings.devices,
    )


def test_every_pod_is_bound_with_a_gpu_of_its_node(gpu) -> None:
    result, _ = gpu
    assert_all_bound_with_claims_checked(result, PODS)


def test_the_runs_driver_objects_go_with_the_run(gpu) -> None:
    _, devices_left = gpu
    assert devices_left == []
