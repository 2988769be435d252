"""A scenario's devices on the bench: a fake DRA driver's GPUs and a claim for every pod.

A scenario whose ``bench`` section holds ``gpu`` (``GpuSettings``) runs every pod of its
burst with a ResourceClaimTemplate asking ``per_pod`` devices of one DeviceClass, on nodes
where the bench has published ``per_node`` GPUs each as a driver would (one ResourceSlice
a node, attributes model and memoryGiB, a memory capacity). kube-controller-manager's
resourceclaim controller makes each pod's claim from its template; the scheduler allocates
it and reserves it for the pod.

Each contender gets a driver of its own (named after the run), so its DeviceClass selects
only its own slices and no run sees the devices or claims another left behind. Before the
clock the class, the slices and the templates are created; after the run ``check`` reads
the pods, their claims and the slices back from the API server and proves each allocation
valid without the scheduler's code: every bound pod's claim allocated with exactly
``per_pod`` devices, each published in a slice of the pod's node and of the run's driver,
reserved for the pod, and no device in two claims. ``delete`` removes the run's templates,
slices and class (the claims go with their pods: the controller owns them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field

from kubesalvo.core.snapshot import Snapshot
from kubesalvo.sched.bench.gpuspec import GpuSettings
from kubesalvo.sched.bench.workload import RUN_LABEL
from kubesalvo.sched.cluster.api import ApiClient, Object

RESOURCE = "resource.k8s.io/v1"
PATH = "/apis/resource.k8s.io/v1"
CLAIM = "gpu"  # the pod's name of its claim, and the request's
TEMPLATE = "gpu"
MODELS = (("a100", 80), ("h100", 141))  # node i gets MODELS[i % 2]
SHOWN = 20


@dataclass
class RunDevices:
    """The run's driver and the objects the bench creates for it."""

    run_id: str
    driver: str
    per_pod: int
    device_class: Object = field(default_factory=dict)
    slices: list[Object] = field(default_factory=list)
    templates: list[Object] = field(default_factory=list)

    @property
    def selector(self) -> str:
        return f"{RUN_LABEL}={self.run_id}"


def _labels(run_id: str) -> dict[str, str]:
    return {RUN_LABEL: run_id}


def _slice(node: str, index: int, driver: str, per_node: int, run_id: str) -> Object:
    model, memory = MODELS[index % len(MODELS)]
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": model}, "memoryGiB": {"int": memory}},
            "capacity": {"memory": {"value": f"{memory}Gi"}},
        }
        for i in range(per_node)
    ]
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}", "labels": _labels(run_id)},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def for_run(
    settings: GpuSettings | None, cluster: Snapshot, pods: list[Object], run_id: str
) -> RunDevices | None:
    """The run's driver, class, slices (one a node of ``cluster``) and templates (one a
    namespace of ``pods``); ``pods`` (the run's copies, see ``workload.burst``) are changed
    to use a claim from the template. None without ``settings``."""
    if settings is None:
        return None
    suffix = run_id.rsplit("-", 1)[-1]
    driver = f"gpu-{suffix}.bench.kubesalvo.io"
    run = RunDevices(run_id, driver, settings.per_pod)
    run.device_class = {
        "apiVersion": RESOURCE,
        "kind": "DeviceClass",
        "metadata": {"name": driver, "labels": _labels(run_id)},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }
    run.slices = [
        _slice(node["metadata"]["name"], i, driver, settings.per_node, run_id)
        for i, node in enumerate(cluster.nodes)
    ]
    namespaces = sorted({pod["metadata"].get("namespace") or "default" for pod in pods})
    request = {"name": CLAIM, "exactly": {"deviceClassName": driver, "count": settings.per_pod}}
    run.templates = [
        {
            "apiVersion": RESOURCE,
            "kind": "ResourceClaimTemplate",
            "metadata": {
                "name": f"{TEMPLATE}-{suffix}",
                "namespace": ns,
                "labels": _labels(run_id),
            },
            # The claims made from it carry the run label too (the controller copies it).
            "spec": {
                "metadata": {"labels": _labels(run_id)},
                "spec": {"devices": {"requests": [request]}},
            },
        }
        for ns in namespaces
    ]
    entry = {"name": CLAIM, "resourceClaimTemplateName": f"{TEMPLATE}-{suffix}"}
    for pod in pods:
        spec = pod["spec"]
        containers = [
            {**c, "resources": {**(c.get("resources") or {}), "claims": [{"name": CLAIM}]}}
            for c in spec["containers"]
        ]
        pod["spec"] = {**spec, "resourceClaims": [entry], "containers": containers}
    return run


async def create(client: ApiClient, run: RunDevices) -> None:
    """Creates the run's class, slices and templates."""
    await client.create(run.device_class)
    await client.create_all(run.slices)
    await client.create_all(run.templates)


async def delete(client: ApiClient, run: RunDevices, concurrency: int) -> None:
    """Deletes the run's templates, slices and class; nothing waits for the claims, which
    the garbage collector removes with their pods."""

    async def worker(pending: Iterator[Object]) -> None:
        for obj in pending:
            await client.delete(obj)

    for objects in (run.templates, run.slices, [run.device_class]):
        pending = iter(objects)
        await asyncio.gather(
            *(worker(pending) for _ in range(max(1, min(concurrency, len(objects)))))
        )


async def _listed(client: ApiClient, path: str, selector: str) -> list[Object]:
    items: list[Object] = []
    params = {"labelSelector": selector, "limit": "5000"}
    while True:
        page = await client.request("GET", path, params=params)
        items.extend(page["items"])
        token = page["metadata"].get("continue")
        if not token:
            return items
        params = {"labelSelector": selector, "limit": "5000", "continue": token}


@dataclass
class DeviceCheck:
    """What the API server shows of the run's bound pods' claims."""

    claims_checked: int = 0
    devices_checked: int = 0
    violations: list[str] = field(default_factory=list)
    violation_count: int = 0

    def add(self, message: str) -> None:
        self.violation_count += 1
        if len(self.violations) < SHOWN:
            self.violations.append(message)


def verify(
    run: RunDevices, pods: list[Object], claims: list[Object], slices: list[Object]
) -> DeviceCheck:
    """Every bound pod's claim allocated with ``run.per_pod`` devices of the run's driver,
    each published in a slice for the pod's node, the claim reserved for the pod, and no
    device in two claims (see the module docstring)."""
    published = {
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]): s["spec"].get("nodeName")
        for s in slices
        for d in s["spec"].get("devices") or ()
    }
    by_name = {f"{c['metadata']['namespace']}/{c['metadata']['name']}": c for c in claims}
    owner: dict[tuple[str, str, str], str] = {}
    result = DeviceCheck()
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
            claim_name = entry.get("resourceClaimName") or made.get(entry["name"])
            claim = by_name.get(f"{namespace}/{claim_name}") if claim_name else None
            if claim is None:
                result.add(f"{key} on {node}: no claim {claim_name or entry['name']} found")
                continue
            status = claim.get("status") or {}
            reserved = {r.get("uid") for r in status.get("reservedFor") or ()}
            if pod["metadata"].get("uid") not in reserved:
                result.add(f"{key}: claim {claim_name} is not reserved for it")
            allocation = (status.get("allocation") or {}).get("devices") or {}
            results = allocation.get("results") or []
            if len(results) != run.per_pod:
                result.add(
                    f"{key}: claim {claim_name} has {len(results)} devices, asked {run.per_pod}"
                )
            for given in results:
                result.devices_checked += 1
                device = (given.get("driver"), given.get("pool"), given.get("device"))
                if given.get("driver") != run.driver or device not in published:
                    result.add(f"{key}: {'/'.join(map(str, device))} is not a published device")
                elif published[device] != node:
                    result.add(
                        f"{key} on {node}: {'/'.join(map(str, device))} is on {published[device]}"
                    )
                if owner.setdefault(device, key) != key:
                    result.add(f"{'/'.join(map(str, device))} given to {owner[device]} and {key}")
    return result


async def check(client: ApiClient, run: RunDevices) -> DeviceCheck:
    """``verify`` on what the API server holds after the run."""
    pods = await _listed(client, "/api/v1/pods", run.selector)
    claims = await _listed(client, f"{PATH}/resourceclaims", run.selector)
    slices = await _listed(client, f"{PATH}/resourceslices", run.selector)
    return verify(run, pods, claims, slices)
