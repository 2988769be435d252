"""An informer: one resource's stream applied to its store, changes handed to a handler.

The handler is a plain function called on the event loop for every ``Change`` (ADDED,
MODIFIED, DELETED, SYNCED), in the order the API server produced them. It must be quick
(update ClusterState, push to the queue); a handler that raises is logged and the
informer goes on, since dropping the rest of the stream would be worse.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.informers.store import SYNCED, Change, Store
from kubesalvo.sched.informers.watch import (
    Listed,
    Resource,
    WatchSettings,
    WatchState,
    infinite_watch,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

Handler = Callable[[Change[T]], None]


class Informer(Generic[T]):
    """Keeps ``store`` equal to the API server's collection and reports every change."""

    def __init__(
        self,
        client: ApiClient,
        resource: Resource[T],
        handler: Handler[T] | None = None,
        settings: WatchSettings | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.handlers: list[Handler[T]] = [handler] if handler else []
        self.settings = settings or WatchSettings()
        self.state = WatchState()
        self.store: Store[T] = Store()
        # Set once the first list has been applied; stays set across relists.
        self.synced = asyncio.Event()
        # Seconds the handlers took over the first list (the start's state build).
        self.sync_seconds = 0.0
        self._task: asyncio.Task[None] | None = None

    def add_handler(self, handler: Handler[T]) -> None:
        self.handlers.append(handler)

    def start(self) -> asyncio.Task[None]:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name=f"informer-{self.resource.plural}")
        return self._task

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run(self) -> None:
        async for item in infinite_watch(self.client, self.resource, self.settings, self.state):
            if isinstance(item, Listed):
                first, began = not self.synced.is_set(), time.perf_counter()
                self._dispatch(self.store.replace(item.items))
                if first:
                    self.sync_seconds = time.perf_counter() - began
            else:
                self._dispatch(self.store.apply_event(item.type, item.object))

    def _dispatch(self, changes: Iterable[Change[T]]) -> None:
        for change in changes:
            if change.type == SYNCED:
                self.synced.set()
            for handler in self.handlers:
                try:
                    handler(change)
                except Exception:
                    log.exception("%s handler failed on %s", self.resource.plural, change.type)


async def wait_synced(informers: Iterable[Informer[object]], timeout: float | None = None) -> None:
    """Wait until every informer has applied its first list."""
    await asyncio.wait_for(
        asyncio.gather(*(informer.synced.wait() for informer in informers)), timeout
    )
