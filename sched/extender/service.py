"""A running extender: the HTTP server, the watches that feed its state, the agents' work.

``Extender.run`` starts everything and serves until ``stop()``; then it stops accepting
requests, lets the ones in flight finish, stops the agents and the watches. Without an
API client it serves requests that carry full nodes only (names-only requests find no
node, binds answer with an error) and says so at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aiohttp import web

from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.extender.config import ExtenderConfig
from kubesalvo.sched.extender.feed import NodeFeed
from kubesalvo.sched.extender.guard import ServingGuard
from kubesalvo.sched.extender.metrics import ExtenderMetrics
from kubesalvo.sched.extender.server import ExtenderApp
from kubesalvo.sched.informers import NODES, PODS, Informer, WatchSettings, wait_synced
from kubesalvo.sched.informers.models import Node, Pod

__all__ = ["Extender"]

log = logging.getLogger(__name__)

# Finished pods hold nothing on their node (the watch reports them DELETED when they end).
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
MAINTENANCE_SECONDS = 5.0


class Extender:
    def __init__(
        self,
        config: ExtenderConfig,
        client: ApiClient | None,
        host: str = "127.0.0.1",
        port: int = 8888,
        guard: ServingGuard | None = None,
    ) -> None:
        self.config = config
        self.guard = guard or ServingGuard()
        self.client = client
        self.host = host
        self.port = port
        self.feed = NodeFeed([entry.agent for entry in config.agents])
        self.informers: list[Informer[Any]] = []
        self.pods: Informer[Pod] | None = None
        if client is not None:
            nodes: Informer[Node] = Informer(client, NODES, self.feed.on_node_change)
            self.pods = Informer(
                client,
                PODS,
                self.feed.on_pod_change,
                WatchSettings(field_selector=ACTIVE_PODS),
            )
            self.informers = [nodes, self.pods]
        self.metrics = ExtenderMetrics()
        self.web = ExtenderApp(
            config,
            self.feed,
            client,
            pod_lookup=self._pod,
            ready=self._synced,
            metrics=self.metrics,
            guard=self.guard,
        )
        self._runner: web.AppRunner | None = None
        self._reload: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    def _pod(self, namespace: str, name: str) -> Pod | None:
        return self.pods.store.get(f"{namespace}/{name}") if self.pods is not None else None

    def _synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers)

    async def synced(self, timeout: float | None = None) -> None:
        """Wait until every watch has applied its first list."""
        await wait_synced(self.informers, timeout)

    @property
    def url(self) -> str:
        scheme = "https" if self.guard.https else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    async def start(self) -> None:
        """Listen, then start the watches and agents; ``OSError`` when the address cannot
        be listened on (nothing is left running then)."""
        tls = self.guard.tls()
        self._runner = web.AppRunner(self.web.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=tls[0] if tls else None)
        try:
            await site.start()
        except OSError:
            await self._runner.cleanup()
            self._runner = None
            raise
        if tls is not None:
            self._reload = asyncio.create_task(tls[1].watch(), name="extender-certificate")
        if self.port == 0:
            sockets = getattr(site._server, "sockets", None) or []
            if sockets:
                self.port = sockets[0].getsockname()[1]
        for informer in self.informers:
            informer.start()
        for entry in self.config.agents:
            await entry.agent.start(self.client, self.feed.state)
        names = ", ".join(f"{e.name} (weight {e.weight})" for e in self.config.agents)
        log.info("extender serving on %s with agents %s", self.url, names)
        if self.client is None:
            log.warning(
                "no API server credentials: only requests with full Node objects "
                "(nodeCacheCapable: false) can be answered, and bind is refused"
            )

    async def run(self) -> None:
        if self._runner is None:
            await self.start()
        maintenance = asyncio.create_task(self._maintain(), name="extender-maintenance")
        try:
            await self._stop.wait()
        finally:
            maintenance.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await maintenance
            await self.shutdown()

    def stop(self) -> None:
        self._stop.set()

    async def shutdown(self) -> None:
        if self._reload is not None:
            self._reload.cancel()
            self._reload = None
        if self._runner is not None:
            await self._runner.cleanup()  # stops listening, lets requests in flight end
            self._runner = None
        for entry in self.config.agents:
            await entry.agent.stop()
        for informer in self.informers:
            await informer.stop()

    async def _maintain(self) -> None:
        while True:
            await asyncio.sleep(MAINTENANCE_SECONDS)
            self.feed.sweep()
            self.feed.cache.expire()
