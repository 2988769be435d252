"""The ``gpu`` scenario end to end at a tiny size on a control plane of its own (v1.37):
each contender gets a driver of its own, every pod's claim from its template is allocated
one published GPU of the pod's node, no device twice (read back from the API server), and
the run's slices, templates and class are deleted with its pods."""

from __future__ import annotations

import pytest

from kubesalvo.sched.bench import contenders, harness
from kubesalvo.sched.bench.gpus import PATH
from kubesalvo.sched.bench.results import BenchResult
from kubesalvo.sched.bench.workload import RUN_LABEL, load_scenario, load_settings
from kubesalvo.sched.cluster import ApiClient, controlplane
from kubesalvo.sched.cluster.controlplane import ControlPlane
from tests.sched.bench.test_harness import _require_binaries

pytestmark = [pytest.mark.integration, pytest.mark.slow]

NODES, PODS = 10, 40  # 80 GPUs for 40 pods of one GPU each
KUBERNETES = "v1.37.2"


@pytest.fixture(scope="module")
def gpu(tmp_path_factory: pytest.TempPathFactory) -> tuple[BenchResult, list[dict]]:
    _require_binaries()
    out = tmp_path_factory.mktemp("gpu")
    options = harness.Options(
        scenario=load_scenario("gpu").resized(NODES, PODS),
        schedulers=(contenders.KUBESALVO, contenders.KUBE_SCHEDULER),
        dir=out / "control-plane",
        settle=30.0,
        timeout=300.0,
        keep=True,
        die_with_parent=True,
        kubernetes=KUBERNETES,
        gpu=load_settings("gpu").gpu,
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


def test_every_pod_gets_one_published_gpu_of_its_node_never_one_twice(gpu) -> None:
    result, _ = gpu
    assert [run.scheduler for run in result.runs] == ["kubesalvo", "kube-scheduler"]
    for run in result.runs:
        assert (run.outcome, run.pods, run.bound) == ("all bound", PODS, PODS)
        assert run.feasibility["checked"] and run.feasibility["ok"], run.feasibility
        assert run.feasibility["claims_checked"] == PODS
        assert run.feasibility["devices_checked"] == PODS
        assert run.pods_per_second > 0


def test_the_runs_slices_templates_and_class_go_with_the_run(gpu) -> None:
    _, devices_left = gpu
    assert [o for o in devices_left if not o["metadata"].get("deletionTimestamp")] == []
