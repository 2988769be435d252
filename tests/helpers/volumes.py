"""Storage objects for tests: claims, volumes, classes and CSINodes as the API has them."""

from __future__ import annotations

from typing import Any

from kubesalvo.core.volumes import ANN_BIND_COMPLETED

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def storage_class(name: str, mode: str = "WaitForFirstConsumer", provisioner: str = "") -> dict:
    return {
        "metadata": {"name": name},
        "provisioner": provisioner or "kubernetes.io/no-provisioner",
        "volumeBindingMode": mode,
    }


def claim(
    name: str,
    namespace: str = "ns",
    *,
    volume: str = "",
    bound: bool = True,
    class_name: str | None = "local",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    size: str = "1Gi",
    **extra: Any,
) -> dict:
    """A claim; with ``volume`` it names it, bound by the PV controller unless not ``bound``."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": size}},
    }
    if class_name is not None:
        spec["storageClassName"] = class_name
    status = {"phase": "Pending"}
    if volume:
        spec["volumeName"] = volume
        if bound:
            meta["annotations"] = {ANN_BIND_COMPLETED: "yes"}
            status = {"phase": "Bound"}
    obj = {"metadata": meta, "spec": spec, "status": status}
    for key, value in extra.items():
        obj[key].update(value)
    return obj


def local_volume(
    name: str,
    node: str | None = None,
    *,
    class_name: str = "local",
    size: str = "10Gi",
    labels: dict[str, str] | None = None,
    csi_driver: str = "",
) -> dict:
    """A PV, with node affinity to ``node`` (by hostname) when given."""
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": class_name,
    }
    if node is not None:
        term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    if csi_driver:
        spec["csi"] = {"driver": csi_driver, "volumeHandle": name}
    else:
        spec["local"] = {"path": f"/mnt/{name}"}
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def csi_node(node: str, driver: str, count: int | None) -> dict:
    entry: dict[str, Any] = {"name": driver, "nodeID": node}
    if count is not None:
        entry["allocatable"] = {"count": count}
    return {"metadata": {"name": node}, "spec": {"drivers": [entry]}}


def claim_volume(name: str, claim_name: str) -> dict:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name}}
