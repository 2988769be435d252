"""The image reporter's tests: a kwok node of each test's own, deleted afterwards."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tests.sched.test_app import kwok_node


@pytest.fixture
def node(control_plane: Any) -> Iterator[str]:
    name = f"images-{secrets.token_hex(3)}"
    control_plane.create([kwok_node(name, name)])
    try:
        yield name
    finally:

        async def delete(client: Any) -> None:
            await client.request("DELETE", f"/api/v1/nodes/{name}")

        control_plane.call(delete)
