"""The ``gpu`` scenario end to end at a tiny size on a control plane of its own: each
contender gets a DRA driver of its own (GPUs published per node, a claim template per pod
class), every pod is bound with its claim allocated a GPU of its node, read back from the
API server, and the run's driver objects are deleted with its pods."""

from __future__ import annotations

import pytest

from kubesalvo.sched.bench import contenders, harness
from kubesalvo.sched.bench.devices import PATH
from kubesalvo.sched.bench.results import BenchResult
from kubesalvo.sched.bench.workload import RUN_LABEL, load_scenario, load_settings
from kubesalvo.sched.cluster import ApiClient, controlplane
from kubesalvo.sched.cluster.controlplane import ControlPlane
from tests.sched.bench.test_harness import _require_binaries

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NODES, PODS = 6, 30  # 48 GPUs


@pytest.fixture(scope="module")
def gpu(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchResult, list[dict]]:
    _require_binaries()
    out = tmp_path_factory.mktemp("gpu")
    settings = load_settings("gpu")
    assert settings.devices is not None and settings.devices.gpus_per_pod == 1
    options = harness.Options(
        scenario=load_scenario("gpu").resized(NODES, PODS),
        schedulers=(contenders.KUBESALVO, contenders.KUBE_SCHEDULER),
        dir=out / "control-plane",
        settle=30.0,
        timeout=300.0,
        keep=True,
        die_with_parent=True,
        devices=settings.devices,
    )
    try:
        result = harness.run(options, lambda message: None)

        async def left(client: ApiClient) -> list[dict]:
            found = []
            for kind in ("resourceslices", "resourceclaimtemplates", "deviceclasses"):
                listing = await client.request(
                    "GET", f"{PATH}/{kind}", params={"labelSelector": RUN_LABEL}
                )
                found.extend(listing["items"])
            return found

        devices_left = ControlPlane.load(options.dir).call(left)
    finally:
        controlplane.stop(options.dir)
    return result, devices_left


def test_every_pod_is_bound_with_a_gpu_of_its_node(gpu) -> None:
    result, _ = gpu
    assert [run.scheduler for run in result.runs] == ["kubesalvo", "kube-scheduler"]
    for run in result.runs:
        assert (run.outcome, run.pods, run.bound) == ("all bound", PODS, PODS)
        assert run.feasibility["checked"] and run.feasibility["ok"], run.feasibility
        assert run.feasibility["claims_checked"] == PODS


def test_the_runs_driver_objects_go_with_the_run(gpu) -> None:
    _, devices_left = gpu
    assert devices_left == []
