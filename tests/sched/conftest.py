"""Fixtures for the runtime's integration tests: kubesalvo's own API client on the real
control plane (``control_plane`` from tests/conftest.py), directly or through the fault
proxy, and a helper that waits for a condition."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import msgspec
import pytest

from kubesalvo.sched.client import ApiClient, Credentials, load_credentials
from kubesalvo.sched.faultproxy.proxy import FaultProxy


@pytest.fixture
def credentials(control_plane) -> Credentials:
    """Credentials loaded from the control plane's kubeconfig, as ``kubesalvo run`` does."""
    return load_credentials(str(control_plane.kubeconfig))


@pytest.fixture
async def api(credentials: Credentials) -> AsyncIterator[ApiClient]:
    async with ApiClient(credentials, qps=0) as client:
        yield client


@pytest.fixture
async def proxy(credentials: Credentials) -> AsyncIterator[FaultProxy]:
    async with FaultProxy(credentials.server, upstream_ssl=credentials.ssl_context()) as fp:
        yield fp


@pytest.fixture
async def proxied_api(proxy: FaultProxy, credentials: Credentials) -> AsyncIterator[ApiClient]:
    """A client whose every request goes through ``proxy``."""
    async with ApiClient(Credentials(server=proxy.url, token=credentials.token), qps=0) as client:
        yield client


async def _eventually(
    predicate: Callable[[], bool], timeout: float = 20.0, what: str = "condition"
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not reached within {timeout:.0f}s")
        await asyncio.sleep(0.05)


@pytest.fixture
def eventually() -> Callable[..., Awaitable[None]]:
    """``await eventually(predicate, timeout, what)``: wait until ``predicate()`` holds."""
    return _eventually


@pytest.fixture
def create_pod(api: ApiClient) -> Callable[..., Awaitable[dict[str, Any]]]:
    """``await create_pod(namespace, name, **spec_fields)``: a pending pod for kubesalvo."""

    async def create(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "test"}},
            "spec": {
                "schedulerName": "kubesalvo",
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                **spec,
            },
        }
        response = await api.request(
            "POST", f"/api/v1/namespaces/{namespace}/pods", body=msgspec.json.encode(body)
        )
        created: dict[str, Any] = msgspec.json.decode(response.body)
        return created

    return create
