"""The extender tests' helpers: API-shaped nodes and pods, and a running extender.

``running_extender(config, client)`` starts a real ``Extender`` (aiohttp on a free
loopback port) in the test's event loop; ``post(url, verb, body)`` sends one request
the way kube-scheduler's HTTPExtender does and returns (status, decoded JSON).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import msgspec

from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.extender.config import ExtenderConfig, build
from kubesalvo.sched.extender.service import Extender


def node(
    name: str,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    rv: str = "1",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "resourceVersion": rv,
            "uid": f"uid-{name}",
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            "annotations": annotations or {},
            "managedFields": [{"manager": "kwok", "operation": "Update"}],
        },
        "spec": {},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str = "p",
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    cpu: str = "100m",
    memory: str = "128Mi",
    node_name: str = "",
    phase: str = "Pending",
    uid: str | None = None,
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory, **(extra or {})}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": requests}}]
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{namespace}-{name}",
            "resourceVersion": "1",
            "labels": labels or {},
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def config(agents: list[dict[str, Any]], **extra: Any) -> ExtenderConfig:
    return build({"agents": agents, **extra}, "test")


@contextlib.asynccontextmanager
async def running_extender(
    cfg: ExtenderConfig, client: ApiClient | None = None
) -> AsyncIterator[Extender]:
    extender = Extender(cfg, client, "127.0.0.1", 0)
    await extender.start()
    try:
        yield extender
    finally:
        await extender.shutdown()


async def post(url: str, verb: str, body: Any) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else msgspec.json.encode(body)
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{url}/{verb}", data=data, headers={"Content-Type": "application/json"}
        ) as response,
    ):
        raw = await response.read()
        return response.status, msgspec.json.decode(raw) if raw else None


def typed(obj: dict[str, Any]) -> Any:
    """The informers' typed view (``Node`` or ``Pod``) of an API-shaped dict."""
    from kubesalvo.sched.informers.models import Node, Pod

    return msgspec.convert(obj, Node if obj["kind"] == "Node" else Pod)


class FakeClock:
    """A clock the test moves (agents' decay and sample times)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
