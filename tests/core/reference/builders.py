"""Small builders of API JSON nodes and pods for the reference tests."""

from __future__ import annotations

from typing import Any


def node(
    name: str,
    labels: dict[str, str] | None = None,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    images: list[tuple[list[str], int]] | None = None,
    **extra: str,
) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **extra}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {
            "allocatable": allocatable,
            "images": [{"names": n, "sizeBytes": size} for n, size in images or []],
        },
    }


def pod(
    name: str = "p",
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
    node_name: str | None = None,
    image: str = "app:1",
    **spec: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": image}
    if requests is not None:
        container["resources"] = {"requests": requests}
    body: dict[str, Any] = {"containers": [container], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": body,
    }


def zones(count: int, per_zone: int, **kwargs: Any) -> list[dict[str, Any]]:
    """``count`` zones z0.. of ``per_zone`` nodes each, named z<zone>-<index>."""
    return [
        node(f"z{z}-{i}", {"topology.kubernetes.io/zone": f"z{z}"}, **kwargs)
        for z in range(count)
        for i in range(per_zone)
    ]
