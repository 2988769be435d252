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

    def network_slice(self, name: str, label: str, value: str, count: int) -> dict[str, Any]:
        """A pool of ``count`` devices of kind net reachable from the nodes labelled
        ``label=value`` (a ResourceSlice with a nodeSelector, as a network-attached
        device's driver publishes it)."""
        devices = [
            {"name": f"net-{i}", "attributes": {"kind": {"string": "net"}}} for i in range(count)
        ]
        selector = {"matchExpressions": [{"key": label, "operator": "In", "values": [value]}]}
        return {
            "apiVersion": RESOURCE,
            "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-{self.name}"},
            "spec": {
                "driver": self.name,
                "nodeSelector": {"nodeSelectorTerms": [selector]},
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
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


def _reaches(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    """Whether a slice serves the node: its own node, or a selector of In terms."""
    meta = node.get("metadata") or {}
    if spec.get("nodeName"):
        return bool(spec["nodeName"] == meta.get("name"))
    labels = meta.get("labels") or {}
    for term in (spec.get("nodeSelector") or {}).get("nodeSelectorTerms") or ():
        if all(
            r["operator"] == "In" and labels.get(r["key"]) in r["values"]
            for r in term.get("matchExpressions") or ()
        ):
            return True
    return bool(spec.get("allNodes"))


def check_allocations(
    pods: Iterable[dict[str, Any]],
    claims: dict[str, dict[str, Any]],
    slices: list[dict[str, Any]],
    nodes: dict[str, dict[str, Any]],
) -> list[str]:
    """What is wrong with the allocations of the bound pods, checked without the
    scheduler's code: each claim allocated, on devices published for the pod's node
    (``nodes`` by name), reserved for the pod, and no device in two claims."""
    published = {
        (s["spec"]["driver"], s["spec"]["pool"]["name"], d["name"]): s["spec"]
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
                spec = published.get(device)
                if spec is None or not _reaches(spec, nodes.get(node, {})):
                    problems.append(f"{name}: {device} is not a device of {node}")
                if owner.setdefault(device, claim_name) != claim_name:
                    problems.append(f"{device} given to {owner[device]} and {claim_name}")
    return problems


def attribute(device: tuple[str, str, str], slices: list[dict[str, Any]], name: str) -> Any:
    for s in slices:
        if (s["spec"]["driver"], s["spec"]["pool"]["name"]) == device[:2]:
            for d in s["spec"]["devices"]:
                if d["name"] == device[2] and name in d["attributes"]:
                    return next(iter(d["attributes"][name].values()))
    return None
