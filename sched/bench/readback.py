"""Reading a run's objects back from the API server, and taking them away again.

What the independent checks of a run share (``harness``, ``volumes``, ``devices``): listing
a whole collection page by page (optionally by label selector), deleting a list of objects
with a bounded number of requests in flight, and counting the problems found about a run's
claims while keeping the first few to show.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from kubesalvo.sched.cluster.api import ApiClient, Object

PAGE = "5000"
SHOWN = 20


async def list_all(client: ApiClient, path: str, selector: str = "") -> list[Object]:
    """Every object of the collection at ``path`` (those ``selector`` selects, if given)."""
    items: list[Object] = []
    params = {"limit": PAGE}
    if selector:
        params["labelSelector"] = selector
    while True:
        page = await client.request("GET", path, params=params)
        items.extend(page["items"])
        token = page["metadata"].get("continue")
        if not token:
            return items
        params = {**params, "continue": token}


async def delete_all(client: ApiClient, objects: Sequence[Object], concurrency: int) -> None:
    """Deletes ``objects``, ``concurrency`` requests at a time (one already gone is fine)."""
    pending: Iterator[Object] = iter(objects)

    async def worker() -> None:
        for obj in pending:
            await client.delete(obj)

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(objects))))))


@dataclass
class ClaimCheck:
    """What is wrong with the claims of a run's bound pods, and how many were read."""

    claims_checked: int = 0
    violations: list[str] = field(default_factory=list)
    violation_count: int = 0

    def add(self, message: str) -> None:
        self.violation_count += 1
        if len(self.violations) < SHOWN:
            self.violations.append(message)
