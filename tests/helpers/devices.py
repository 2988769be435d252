"""A fake DRA driver for the runtime tests: GPUs published per node as a driver would,
device classes, claim templates, and an independent check of what got allocated."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

RESOURCE = "resource.k8s.io/v1"
PATH = "/apis/resource.k8s.io/v1"


class Driver:
    """One driver: ``gpus`` GPUs (kind gpu) and ``spares`` (kind spare) per node, each with
    the attributes model (the node's) and memoryGiB, and a memory capacity."""

    def __init__(self, name: str, gpus: int = 8, spares: int = 0) -> None:
        self.name = name
        self.gpus = gpus
        self.spares = spares

    def slice(self, node: str, model: str) -> dict[str, Any]:
        memory = 80 if model == "a100" else 141
        devices = [
            {
                "name": f"{kind}-{i}",
                "attributes": {
                    "kind": {"string": kind},
                    "model": {"string": model},
                    "memoryGiB": {"int": memory},
                },
                "capacity": {"memory": {"value": f"{memory}Gi"}},
            }
            for kind, count in (("gpu", self.gpus), ("spare", self.spares))
            for i in range(count)
        ]
        return {
            "apiVersion": RESOURCE,
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{self.name}"},
            "spec": {
                "driver": self.name,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }

    def device_class(self, kind: str) -> dict[str, Any]:
        expression = (
            f'device.driver == "{self.name}" && device.attributes["{self.name}"].kind == "{kind}"'
        )
        return {
            "apiVersion": RESOURCE,
            "kind": "DeviceClass",
            "metadata": {"name": f"{kind}.{self.name}"},
            "spec": {"selectors": [{"cel": {"expression": expression}}]},
        }

    def model_is(self, model: str) -> str:
        return f'device.attributes["{self.name}"].model == "{model}"'


def request(name: str, device_class: str, count: int = 1, mode: str = "", selectors=()):
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if mode:
        exactly["allocationMode"] = mode
    else:
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


def claim_spec(*requests: dict[str, Any], constraints=()) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = list(constraints)
    return {"devices": devices}


def template(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": spec},
    }


def claim(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def pod(
    namespace: str, name: str, scheduler: str, pool: str, *, templates=(), claims=()
) -> dict[str, Any]:
    """A pod on the test's own nodes (``kubesalvo.io/test-pool``) using the named claim
    templates (one claim each, made for it) and shared claims."""
    entries = [{"name": f"t{i}", "resourceClaimTemplateName": t} for i, t in enumerate(templates)]
    entries += [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {"kubesalvo.io/test-pool": pool},
            "resourceClaims": entries,
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"claims": [{"name": e["name"]} for e in entries]},
                }
            ],
        },
    }


def claims_of(pod: dict[str, Any], claims: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The pod's claims (by name in ``claims``), in its spec's order."""
    made = {
        s["name"]: s.get("resourceClaimName")
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
    }
    out = []
    for entry in pod["spec"].get("resourceClaims") or ():
        out.append(claims[entry.get("resourceClaimName") or made[entry["name"]]])
    return out


def check_allocations(
    pods: Iterable[dict[str, Any]], claims: dict[str, dict[str, Any]], slices: list[dict[str, Any]]
) -> list[str]:
    """What is wrong with the allocations of the bound pods, checked without the
    scheduler's code: each claim allocated with one result per requested device, on a
    device its node publishes, reserved for the pod, and no device in two claims."""
    published = {
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]): (s["spec"]["nodeName"], d)
        for s in slices
        for d in s["spec"]["devices"]
    }
    problems: list[str] = []
    owner: dict[tuple[str, str, str], str] = {}
    for p in pods:
        node = p["spec"].get("nodeName")
        if not node:
            continue
        name = p["metadata"]["name"]
        for c in claims_of(p, claims):
            claim_name = c["metadata"]["name"]
            status = c.get("status") or {}
            if p["metadata"]["uid"] not in {r["uid"] for r in status.get("reservedFor") or ()}:
                problems.append(f"{name}: claim {claim_name} not reserved for it")
            results = ((status.get("allocation") or {}).get("devices") or {}).get("results")
            if not results:
                problems.append(f"{name}: claim {claim_name} not allocated")
                continue
            for r in results:
                device = (r["driver"], r["pool"], r["device"])
                where = published.get(device)
                if where is None or where[0] != node:
                    problems.append(f"{name}: {device} is not a device of {node}")
                if owner.setdefault(device, claim_name) != claim_name:
                    problems.append(f"{device} given to {owner[device]} and {claim_name}")
    return problems


def attribute(device: tuple[str, str, str], slices: list[dict[str, Any]], name: str) -> Any:
    for s in slices:
        if (s["spec"]["driver"], s["spec"]["pool"]["name"]) == device[:2]:
            for d in s["spec"]["devices"]:
                if d["name"] == device[2]:
                    return next(iter(d["attributes"][name].values()))
    return None
