"""DRA objects for the allocator's tests: a driver publishing GPUs per node."""

from __future__ import annotations

from typing import Any

DRIVER = "gpu.example.com"


def gpus(node: str, count: int = 8, model: str = "a100", memory: str = "80Gi", start: int = 0):
    """A node-local ResourceSlice of ``count`` GPUs, as a driver publishes it."""
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": model}, "index": {"int": i}},
            "capacity": {"memory": {"value": memory}},
        }
        for i in range(start, start + count)
    ]
    return {
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def device_class(name: str = "gpu", *expressions: str) -> dict[str, Any]:
    selectors = [{"cel": {"expression": e}} for e in (f'device.driver == "{DRIVER}"', *expressions)]
    return {"metadata": {"name": name}, "spec": {"selectors": selectors}}


def request(name: str = "gpu", count: int = 1, *, cls: str = "gpu", mode: str = "", selectors=()):
    exactly: dict[str, Any] = {"deviceClassName": cls}
    if mode:
        exactly["allocationMode"] = mode
    else:
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


def claim(name: str, *requests: dict[str, Any], constraints=(), namespace: str = "ns", uid=""):
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"},
        "spec": {"devices": {"requests": list(requests), "constraints": list(constraints)}},
    }
