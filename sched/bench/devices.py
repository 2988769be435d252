"""Devices on the bench: GPUs a fake DRA driver publishes, claimed through templates.

A scenario's ``bench.devices`` section (``gpusPerNode``, ``gpusPerPod``) turns its burst
into pods that claim GPUs as Dynamic Resource Allocation users do: each pod class gets a
ResourceClaimTemplate asking for ``gpusPerPod`` devices of a DeviceClass, and each pod
one claim from it (kube-controller-manager's resourceclaim controller makes the claims;
both schedulers wait for them). Every node gets a ResourceSlice of ``gpusPerNode`` GPUs
(attributes model and memoryGiB), published before the clock as a driver publishes them.

Each contender gets a driver of its own (named after the run), so its class, slices and
templates are fresh and no allocation of an earlier run is in its way. After the run
``check`` reads back the run's pods, claims and slices and checks, without the scheduler's
code, that each bound pod's claims are allocated devices published for its node, are
reserved for it, and that no device is in two claims; ``delete`` removes the run's
templates, slices and class (the claims go with their pods).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core.snapshot import Snapshot
from kubesalvo.sched.bench import readback
from kubesalvo.sched.bench.device_settings import DeviceSettings
from kubesalvo.sched.bench.workload import RUN_LABEL
from kubesalvo.sched.cluster.api import ApiClient, Object

RESOURCE = "resource.k8s.io/v1"
PATH = "/apis/resource.k8s.io/v1"
MODELS = ("a100", "h100")


@dataclass
class RunDevices:
    run_id: str
    driver: str
    device_class: Object
    slices: list[Object] = field(default_factory=list)
    templates: list[Object] = field(default_factory=list)

    @property
    def selector(self) -> str:
        return f"{RUN_LABEL}={self.run_id}"


def _meta(name: str, run_id: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {RUN_LABEL: run_id}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def for_run(
    cluster: Snapshot, pods: list[Object], run_id: str, settings: DeviceSettings
) -> RunDevices:
    """The run's driver objects; ``pods`` (the run's copies) are changed to claim GPUs
    through one template per class (pods sharing their app label share a template)."""
    suffix = run_id.rsplit("-", 1)[-1]
    driver = f"gpu-{suffix}.kubesalvo.example.com"
    class_name = f"gpu.{driver}"
    run = RunDevices(
        run_id,
        driver,
        {
            "apiVersion": RESOURCE,
            "kind": "DeviceClass",
            "metadata": _meta(class_name, run_id),
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        },
    )
    for index, node in enumerate(cluster.nodes):
        name = node["metadata"]["name"]
        model = MODELS[index % len(MODELS)]
        memory = 80 if model == "a100" else 141
        devices = [
            {
                "name": f"gpu-{i}",
                "attributes": {"model": {"string": model}, "memoryGiB": {"int": memory}},
                "capacity": {"memory": {"value": f"{memory}Gi"}},
            }
            for i in range(settings.gpus_per_node)
        ]
        run.slices.append(
            {
                "apiVersion": RESOURCE,
                "kind": "ResourceSlice",
                "metadata": _meta(f"{name}-{driver}", run_id),
                "spec": {
                    "driver": driver,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    templates: dict[tuple[str, str], str] = {}
    request = {
        "name": "gpu",
        "exactly": {"deviceClassName": class_name, "count": settings.gpus_per_pod},
    }
    for pod in pods:
        meta = pod["metadata"]
        namespace = meta.get("namespace") or "default"
        app = (meta.get("labels") or {}).get("app") or meta["name"]
        template = templates.get((namespace, app))
        if template is None:
            template = templates[(namespace, app)] = f"gpu-{suffix}-{len(templates)}"
            run.templates.append(
                {
                    "apiVersion": RESOURCE,
                    "kind": "ResourceClaimTemplate",
                    "metadata": _meta(template, run_id, namespace),
                    "spec": {"spec": {"devices": {"requests": [request]}}},
                }
            )
        spec = dict(pod["spec"])
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
        containers = []
        for container in spec.get("containers") or ():
            resources = dict(container.get("resources") or {})
            resources["claims"] = [{"name": "gpu"}]
            containers.append({**container, "resources": resources})
        spec["containers"] = containers
        pod["spec"] = spec
    return run


async def create(client: ApiClient, run: RunDevices) -> None:
    """Publishes the run's class and slices and creates its templates."""
    await client.create(run.device_class)
    await client.create_all(run.slices)
    await client.create_all(run.templates)


async def delete(client: ApiClient, run: RunDevices, concurrency: int) -> None:
    """Removes the run's templates, slices and class."""
    for objects in (run.templates, run.slices, [run.device_class]):
        await readback.delete_all(client, objects, concurrency)


async def check(client: ApiClient, run: RunDevices, gpus_per_pod: int) -> readback.ClaimCheck:
    """Every bound pod of the run has its claim allocated ``gpus_per_pod`` devices that
    the run's driver published for the pod's node, reserved for the pod; no device is in
    two claims."""
    pods = await readback.list_all(client, "/api/v1/pods", run.selector)
    claims = {
        f"{c['metadata']['namespace']}/{c['metadata']['name']}": c
        for c in await readback.list_all(client, f"{PATH}/resourceclaims")
    }
    published: dict[tuple[str, str], str] = {}  # (pool, device) -> node
    for piece in await readback.list_all(client, f"{PATH}/resourceslices", run.selector):
        spec = piece["spec"]
        for device in spec.get("devices") or ():
            published[(spec["pool"]["name"], device["name"])] = spec.get("nodeName") or ""
    result = readback.ClaimCheck()
    holder: dict[tuple[str, str], str] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            continue
        namespace = pod["metadata"]["namespace"]
        key = f"{namespace}/{pod['metadata']['name']}"
        made = {
            s["name"]: s.get("resourceClaimName")
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
        }
        for entry in pod["spec"].get("resourceClaims") or ():
            result.claims_checked += 1
            name = entry.get("resourceClaimName") or made.get(entry["name"])
            claim = claims.get(f"{namespace}/{name}") if name else None
            if claim is None:
                result.add(f"{key} on {node}: its claim {entry['name']} was not found")
                continue
            status = claim.get("status") or {}
            reserved = {r.get("uid") for r in status.get("reservedFor") or ()}
            if pod["metadata"].get("uid") not in reserved:
                result.add(f"{key}: claim {name} is not reserved for it")
            results = ((status.get("allocation") or {}).get("devices") or {}).get("results")
            results = results or []
            if len(results) != gpus_per_pod:
                result.add(f"{key}: claim {name} holds {len(results)} devices, not {gpus_per_pod}")
            for item in results:
                where = (item.get("pool") or "", item.get("device") or "")
                if item.get("driver") != run.driver or where not in published:
                    result.add(
                        f"{key}: claim {name} holds {where}, which the driver did not publish"
                    )
                    continue
                if published[where] != node:
                    result.add(f"{key} on {node}: device {where} is on node {published[where]}")
                if where in holder:
                    result.add(f"device {where} is in the claims of {holder[where]} and {key}")
                holder[where] = key
    return result
