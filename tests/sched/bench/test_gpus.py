"""The gpu scenario's objects and its independent check of what the scheduler allocated,
on API objects built here (no scheduler involved)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesalvo.sched.bench import gpus
from kubesalvo.sched.bench.gpuspec import GpuSettings, GpuSettingsError, parse
from kubesalvo.sched.bench.workload import (
    RUN_LABEL,
    WorkloadError,
    burst,
    load_scenario,
    load_settings,
)

RUN = "kubesalvo-abc123"


def _run(per_pod: int = 1) -> tuple[gpus.RunDevices, list[dict[str, Any]]]:
    cluster = load_scenario("gpu").resized(2, 3).generate(scheduler_name="s")
    pods = burst(cluster, RUN)
    run = gpus.for_run(GpuSettings(per_node=2, per_pod=per_pod), cluster, pods, RUN)
    assert run is not None
    return run, pods


def _bound(pods: list[dict[str, Any]], nodes: list[str]) -> list[dict[str, Any]]:
    out = []
    for i, (pod, node) in enumerate(zip(pods, nodes, strict=True)):
        pod = copy.deepcopy(pod)
        pod["metadata"]["uid"] = f"uid-{i}"
        pod["spec"]["nodeName"] = node
        pod["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": f"c{i}"}]}
        out.append(pod)
    return out


def _claim(run: gpus.RunDevices, pod: dict[str, Any], devices: list[tuple[str, str]]) -> dict:
    name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    results = [
        {"request": "gpu", "driver": run.driver, "pool": pool, "device": device}
        for pool, device in devices
    ]
    return {
        "metadata": {"name": name, "namespace": pod["metadata"]["namespace"]},
        "status": {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "uid": pod["metadata"]["uid"]}],
        },
    }


def test_the_scenario_file_asks_8_gpus_a_node_and_one_a_pod() -> None:
    assert load_settings("gpu").gpu == GpuSettings(per_node=8, per_pod=1)
    scenario = load_scenario("gpu")
    assert (scenario.fleet.nodes, sum(w.pods for w in scenario.workloads)) == (1000, 6000)


def test_each_pod_uses_a_claim_from_the_runs_template_of_the_runs_class() -> None:
    run, pods = _run()
    cluster = load_scenario("gpu").resized(2, 3).generate(scheduler_name="s")
    assert [s["spec"]["nodeName"] for s in run.slices] == [
        n["metadata"]["name"] for n in cluster.nodes
    ]
    assert all(len(s["spec"]["devices"]) == 2 for s in run.slices)
    assert all(s["spec"]["driver"] == run.driver for s in run.slices)
    assert run.driver in run.device_class["spec"]["selectors"][0]["cel"]["expression"]
    template = run.templates[0]
    assert template["spec"]["metadata"]["labels"] == {RUN_LABEL: RUN}
    request = template["spec"]["spec"]["devices"]["requests"][0]
    assert request["exactly"] == {
        "deviceClassName": run.device_class["metadata"]["name"],
        "count": 1,
    }
    for pod in pods:
        assert pod["spec"]["resourceClaims"] == [
            {"name": "gpu", "resourceClaimTemplateName": template["metadata"]["name"]}
        ]
        assert all(c["resources"]["claims"] == [{"name": "gpu"}] for c in pod["spec"]["containers"])


def test_valid_allocations_pass_the_check() -> None:
    run, pods = _run()
    nodes = [s["spec"]["nodeName"] for s in run.slices]
    bound = _bound(pods, [nodes[0], nodes[0], nodes[1]])
    claims = [
        _claim(run, bound[0], [(nodes[0], "gpu-0")]),
        _claim(run, bound[1], [(nodes[0], "gpu-1")]),
        _claim(run, bound[2], [(nodes[1], "gpu-0")]),
    ]
    checked = gpus.verify(run, bound, claims, run.slices)
    assert (checked.violations, checked.claims_checked, checked.devices_checked) == ([], 3, 3)


def test_the_check_finds_a_device_twice_on_another_node_missing_or_unreserved() -> None:
    run, pods = _run()
    nodes = [s["spec"]["nodeName"] for s in run.slices]
    bound = _bound(pods, [nodes[0], nodes[0], nodes[1]])
    twice = _claim(run, bound[1], [(nodes[0], "gpu-0")])
    elsewhere = _claim(run, bound[2], [(nodes[0], "gpu-1")])
    elsewhere["status"]["reservedFor"] = []
    claims = [_claim(run, bound[0], [(nodes[0], "gpu-0")]), twice, elsewhere]
    problems = gpus.verify(run, bound, claims, run.slices).violations
    assert any("given to" in p for p in problems)
    assert any(f"on {nodes[1]}: " in p and f"is on {nodes[0]}" in p for p in problems)
    assert any("is not reserved for it" in p for p in problems)
    missing = gpus.verify(run, bound, claims[:2], run.slices).violations
    assert any("no claim c2 found" in p for p in missing)


def test_the_check_counts_devices_and_knows_the_runs_driver() -> None:
    run, pods = _run(per_pod=2)
    nodes = [s["spec"]["nodeName"] for s in run.slices]
    bound = _bound(pods[:1], [nodes[0]])
    short = [_claim(run, bound[0], [(nodes[0], "gpu-0")])]
    assert any(
        "has 1 devices, asked 2" in p for p in gpus.verify(run, bound, short, run.slices).violations
    )
    foreign = _claim(run, bound[0], [(nodes[0], "gpu-0"), (nodes[0], "gpu-1")])
    foreign["status"]["allocation"]["devices"]["results"][1]["driver"] = "other.example.com"
    problems = gpus.verify(run, bound, [foreign], run.slices).violations
    assert problems == [
        f"{bound[0]['metadata']['namespace']}/{bound[0]['metadata']['name']}: "
        f"other.example.com/{nodes[0]}/gpu-1 is not a published device"
    ]


@pytest.mark.parametrize(
    ("section", "error"),
    [
        ({"devicesPerNode": 0}, "bench.gpu.devicesPerNode: expected an integer >= 1, got 0"),
        ({"devicesPerPod": "x"}, "bench.gpu.devicesPerPod: expected an integer >= 1, got 'x'"),
        ({"gpus": 1}, "bench.gpu.gpus: unknown field; accepted: devicesPerNode, devicesPerPod"),
        ({"devicesPerNode": 2, "devicesPerPod": 3}, "3 is more than a node's 2 devices"),
        ([1], "bench.gpu: expected a mapping, got list"),
    ],
)
def test_a_wrong_gpu_field_is_refused_with_its_path(section: Any, error: str) -> None:
    with pytest.raises(GpuSettingsError, match=error.replace(".", r"\.")):
        parse(section, "bench.gpu")


def test_gpu_devices_come_only_with_bare_pods(tmp_path) -> None:
    scenario = tmp_path / "gpu-deployments.yaml"
    scenario.write_text(
        "name: g\nfleet: {nodes: 2}\nworkloads: [{shape: replicasets, pods: 2}]\n"
        "bench: {create: deployments, gpu: {}}\n"
    )
    with pytest.raises(WorkloadError, match=r"bench\.gpu: only with create: pods"):
        load_settings(str(scenario))
