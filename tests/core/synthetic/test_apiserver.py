"""The generated objects are valid for a real API server, which accepts them as written."""

from __future__ import annotations

import asyncio
import copy

import pytest

from kubesalvo.core.synthetic import (
    make_batch,
    make_pods,
    namespace_objects,
    priority_class_objects,
    scenario_from_yaml,
)
from kubesalvo.core.synthetic.controllers import as_controllers

pytestmark = pytest.mark.integration

# Nobody serves this scheduler name, so the pods stay pending while the test looks at them.
NOBODY = "kubesalvo-test-nobody"


def pods_in(namespace: str, shape: str, count: int, seed: int = 0) -> list[dict]:
    pods = copy.deepcopy(make_pods(count, seed=seed, shape=shape, scheduler_name=NOBODY))
    for pod in pods:
        pod["metadata"]["namespace"] = namespace
    return pods


@pytest.mark.parametrize("shape", ["mixed", "distinct", "gangs", "replicasets"])
def test_the_api_server_accepts_every_pod_of_each_shape(control_plane, namespace, shape):
    control_plane.create(priority_class_objects(), exist_ok=True)
    control_plane.create(namespace_objects(), exist_ok=True)
    pods = pods_in(namespace, shape, 400 if shape != "replicasets" else 50, seed=11)
    assert control_plane.create(pods) == len(pods)


def test_the_server_keeps_the_scheduling_fields_as_generated(control_plane, namespace):
    control_plane.create(priority_class_objects(), exist_ok=True)
    pods = pods_in(namespace, "mixed", 150, seed=12)

    async def create_and_read(client):
        return [await client.create(pod) for pod in pods]

    stored = control_plane.call(create_and_read)
    for sent, got in zip(pods, stored, strict=True):
        for key in ("nodeSelector", "priorityClassName", "schedulerName"):
            assert got["spec"].get(key) == sent["spec"].get(key), key
        # Admission resolves the priority (0 without a class) and adds the default
        # NoExecute tolerations for not-ready and unreachable nodes.
        assert got["spec"]["priority"] == sent["spec"].get("priority", 0)
        tolerations = got["spec"]["tolerations"]
        assert tolerations[: len(sent["spec"].get("tolerations", []))] == sent["spec"].get(
            "tolerations", []
        )
        assert {t["key"] for t in tolerations[len(sent["spec"].get("tolerations", [])) :]} <= {
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        }
        sent_affinity = sent["spec"].get("affinity")
        assert got["spec"].get("affinity") == sent_affinity
        sent_spread = sent["spec"].get("topologySpreadConstraints")
        assert got["spec"].get("topologySpreadConstraints") == sent_spread
        assert [c["resources"] for c in got["spec"]["containers"]] == [
            c["resources"] for c in sent["spec"]["containers"]
        ]
        assert got["metadata"]["labels"] == sent["metadata"]["labels"]


def test_a_small_scenario_creates_on_the_server(control_plane):
    snapshot = scenario_from_yaml(
        "name: tiny\nfleet: {nodes: 5}\nworkloads: [{shape: mixed, pods: 10}]\n"
    ).generate(scheduler_name=NOBODY)
    control_plane.create(snapshot.priorityclasses, exist_ok=True)
    control_plane.create(snapshot.namespaces, exist_ok=True)
    pods = copy.deepcopy(snapshot.pods)
    for pod in pods:
        pod["metadata"]["name"] = f"scenario-{pod['metadata']['name']}"
    try:
        assert control_plane.create(pods) == len(pods)
    finally:

        async def delete(client):
            for pod in pods:
                ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
                await client.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}")

        control_plane.call(delete)


def test_controllers_create_the_burst_through_the_controller_manager(control_plane, namespace):
    control_plane.create(priority_class_objects(), exist_ok=True)
    batch = [
        (pod_class, n)
        for pod_class, n in make_batch(120, seed=13, shape="mixed", scheduler_name=NOBODY)
        if pod_class.workload in ("service", "job", "gang")
    ]
    for pod_class, _ in batch:
        pod_class.namespace = namespace
    controllers, _ = as_controllers(batch)
    expected = sum(n for _, n in batch)
    assert control_plane.create(controllers) == len(controllers)

    async def count_pods(client):
        for _ in range(120):
            listed = await client.request("GET", f"/api/v1/namespaces/{namespace}/pods")
            if len(listed["items"]) >= expected:
                return listed["items"]
            await asyncio.sleep(0.5)
        return listed["items"]

    pods = control_plane.call(count_pods)
    assert len(pods) == expected
    assert all(p["metadata"]["ownerReferences"][0]["controller"] for p in pods)
    assert {p["spec"]["schedulerName"] for p in pods} == {NOBODY}
