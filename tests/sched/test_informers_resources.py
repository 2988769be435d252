"""resource.k8s.io on the real control plane: the informers of DeviceClasses,
ResourceClaims and ResourceSlices, the plain snapshot core takes from them, the
resourceclaim controller making a pod's claim from its template, and ``kubesalvo run``
binding such a pod where its device is, with the allocation written to the claim, and
keeping it pending when DynamicResourcesArgs' filterTimeout runs out, or when it is a gang
member (placed alone, it would escape its gang's minimum)."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import msgspec
import pytest

from kubesalvo.core.dra.objects import pod_claim_names
from kubesalvo.core.plugins import dynamic_resources
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.informers import Informer, to_api_dict
from kubesalvo.sched.informers.models import Pod
from kubesalvo.sched.informers.resources import DRA_RESOURCES, dra_objects
from tests.sched.test_app import (
    CONFIG,
    SchedulerProcess,
    delete_nodes,
    delete_pods,
    kwok_node,
    list_objects,
    pod_scheduled,
    settled,
)

pytestmark = pytest.mark.integration

RESOURCE = "/apis/resource.k8s.io/v1"


def driver_objects(driver: str, node: str) -> list[dict[str, Any]]:
    """A DeviceClass of the driver and the node-local slice of 2 GPUs it publishes."""
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver}"},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}}
                    for i in range(2)
                ],
            },
        },
    ]


def template_and_pod(namespace: str, driver: str, scheduler: str) -> list[dict[str, Any]]:
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": namespace},
        "spec": {
            "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": driver}}]}
            }
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer", "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"claims": [{"name": "gpu"}]},
                }
            ],
        },
    }
    return [template, pod]


def delete_cluster_objects(control_plane: Any, driver: str, node: str) -> None:
    async def delete(client: Any) -> None:
        for path in (
            f"{RESOURCE}/deviceclasses/{driver}",
            f"{RESOURCE}/resourceslices/{node}-{driver}",
        ):
            await client.request("DELETE", path)

    control_plane.call(delete)


async def test_the_informers_hold_the_dra_objects_and_the_claim_made_from_a_template(
    control_plane, api: ApiClient, namespace: str
):
    driver = f"gpu-{secrets.token_hex(3)}.example.com"
    node = f"dra-{secrets.token_hex(3)}"
    informers: list[Informer[Any]] = [Informer(api, resource) for resource in DRA_RESOURCES]
    for informer in informers:
        informer.start()
    try:
        await asyncio.wait_for(asyncio.gather(*(i.synced.wait() for i in informers)), 30)
        control_plane.create(driver_objects(driver, node))
        control_plane.create(template_and_pod(namespace, driver, "nobody"))
        pod_path = f"/api/v1/namespaces/{namespace}/pods/trainer"
        deadline = asyncio.get_running_loop().time() + 30
        while True:
            answer = await api.request("GET", pod_path)
            pod = to_api_dict(msgspec.json.decode(answer.body, type=Pod))
            ((_, claim_name),) = pod_claim_names(pod)
            snapshot = dra_objects(*(list(i.store.values()) for i in informers))
            if claim_name and (namespace, claim_name) in snapshot.claims:
                break
            assert asyncio.get_running_loop().time() < deadline, "no claim made"
            await asyncio.sleep(0.1)
        assert claim_name.startswith("trainer-gpu-")
        claim = snapshot.claims[(namespace, claim_name)]
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == driver
        assert "allocation" not in claim.get("status", {})
        assert driver in snapshot.classes
        pool = snapshot.pools[(driver, node)]
        assert pool.complete and pool.generation == 1
        assert [d["name"] for d in pool.slices[0]["spec"]["devices"]] == ["gpu-0", "gpu-1"]
    finally:
        for informer in informers:
            await informer.stop()
        delete_cluster_objects(control_plane, driver, node)


def test_run_binds_a_pod_with_a_template_claim_where_its_device_is_and_writes_it(
    control_plane, namespace, tmp_path
):
    driver = f"gpu-{secrets.token_hex(3)}.example.com"
    nodes = [kwok_node(f"dra-{secrets.token_hex(3)}", "dra") for _ in range(2)]
    control_plane.create(nodes)
    with_gpus = nodes[1]["metadata"]["name"]
    process = SchedulerProcess(
        tmp_path, control_plane.kubeconfig, CONFIG.format(max_burst=100), "dra"
    )
    control_plane.create(driver_objects(driver, with_gpus))
    objects = template_and_pod(namespace, driver, "kubesalvo")
    objects[1]["spec"]["nodeSelector"] = {"kubesalvo.io/test-pool": "dra"}
    path = f"/api/v1/namespaces/{namespace}/pods/trainer"
    try:
        process.wait_ready()
        control_plane.create(objects)
        settled(
            process,
            60,
            lambda: bool(
                control_plane.call(lambda c: c.request("GET", path))["spec"].get("nodeName")
            ),
        )
        pod = control_plane.call(lambda c: c.request("GET", path))
        assert pod["spec"]["nodeName"] == with_gpus
        (claim,) = list_objects(control_plane, f"{RESOURCE}/namespaces/{namespace}/resourceclaims")
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"]) == (driver, with_gpus)
        assert result["device"] in ("gpu-0", "gpu-1") and result["request"] == "gpu"
        assert claim["status"]["reservedFor"] == [
            {"resource": "pods", "name": "trainer", "uid": pod["metadata"]["uid"]}
        ]
        assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
        # Until its claim existed the pod was held back (DynamicResources' PreEnqueue), not
        # tried and reported, as kube-scheduler does.
        events = list_objects(
            control_plane, f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        )
        assert [e["note"] for e in events if e["reason"] == "FailedScheduling"] == []
    finally:
        process.kill()
        delete_pods(control_plane, [objects[1]])
        delete_cluster_objects(control_plane, driver, with_gpus)
        delete_nodes(control_plane, nodes)


def test_run_honours_the_filter_timeout_of_dynamic_resources_args(
    control_plane, namespace, tmp_path
):
    driver = f"gpu-{secrets.token_hex(3)}.example.com"
    node = kwok_node(f"dra-{secrets.token_hex(3)}", "dra-timeout")
    control_plane.create([node])
    config = CONFIG.format(max_burst=100) + (
        "profiles:\n"
        "- schedulerName: kubesalvo\n"
        "  pluginConfig:\n"
        "  - {name: DynamicResources, args: {filterTimeout: 1ns}}\n"
    )
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "dra-timeout")
    control_plane.create(driver_objects(driver, node["metadata"]["name"]))
    objects = template_and_pod(namespace, driver, "kubesalvo")
    objects[1]["spec"]["nodeSelector"] = {"kubesalvo.io/test-pool": "dra-timeout"}
    path = f"/api/v1/namespaces/{namespace}/pods/trainer"

    def timed_out() -> bool:
        condition = pod_scheduled(control_plane.call(lambda c: c.request("GET", path))) or {}
        return "1 timed out trying to allocate devices" in condition.get("message", "")

    try:
        process.wait_ready()
        control_plane.create(objects)
        settled(process, 60, timed_out)
        assert not control_plane.call(lambda c: c.request("GET", path))["spec"].get("nodeName")
    finally:
        process.kill()
        delete_pods(control_plane, [objects[1]])
        delete_cluster_objects(control_plane, driver, node["metadata"]["name"])
        delete_nodes(control_plane, [node])


def test_run_keeps_a_gang_member_with_a_claim_pending_rather_than_alone(
    control_plane, namespace, tmp_path
):
    driver = f"gpu-{secrets.token_hex(3)}.example.com"
    node = kwok_node(f"dra-{secrets.token_hex(3)}", "dra-gang")
    control_plane.create([node])
    process = SchedulerProcess(
        tmp_path, control_plane.kubeconfig, CONFIG.format(max_burst=100), "dra-gang"
    )
    control_plane.create(driver_objects(driver, node["metadata"]["name"]))
    objects = template_and_pod(namespace, driver, "kubesalvo")
    objects[1]["metadata"]["labels"] = {"podGroup": "trainers", "minAvailable": "1"}
    objects[1]["spec"]["nodeSelector"] = {"kubesalvo.io/test-pool": "dra-gang"}
    path = f"/api/v1/namespaces/{namespace}/pods/trainer"

    def refused() -> bool:
        condition = pod_scheduled(control_plane.call(lambda c: c.request("GET", path))) or {}
        return dynamic_resources.NOT_ALLOCATED in condition.get("message", "")

    try:
        process.wait_ready()
        control_plane.create(objects)
        settled(process, 60, refused)
        assert not control_plane.call(lambda c: c.request("GET", path))["spec"].get("nodeName")
    finally:
        process.kill()
        delete_pods(control_plane, [objects[1]])
        delete_cluster_objects(control_plane, driver, node["metadata"]["name"])
        delete_nodes(control_plane, [node])
