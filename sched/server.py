"""The HTTP servers: health and metrics, and debug pages on loopback only.

``HealthServer`` serves ``/healthz`` and ``/livez`` (the process answers), ``/readyz``
(every readiness check passes: by default the informers have synced; leadership is not
required, so a standby replica is ready) and ``/metrics`` (Prometheus text). Like the API
server's own endpoints, ``/readyz?verbose`` lists each check as ``[+]name ok`` or
``[-]name failed``. It runs over HTTPS when given a TLS context, with the middlewares it
is given (``serving.delegated`` guards /metrics with them); ``serving`` decides which
servers a scheduler runs.

``DebugServer`` is a second server bound to 127.0.0.1 to which other parts add pages
(``/debug/queue``, ``/debug/explain``); it serves ``/debug/memory`` itself (see
``memory``), whose heap walk runs in a worker thread, one at a time, so that it never
stalls the event loop. It is separate so that those pages are never exposed on the
metrics port, and every request must carry its token (``debug_token``).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, Protocol

from aiohttp import web

from kubesalvo.sched.debug_token import token_guard
from kubesalvo.sched.memory import memory_report
from kubesalvo.sched.metrics import CONTENT_TYPE

Check = Callable[[], bool]
Route = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Rendered(Protocol):
    """What /metrics serves: the scheduler's metrics, or the extender's."""

    def render(self) -> bytes: ...


class _Server:
    def __init__(
        self,
        host: str,
        port: int,
        tls: ssl.SSLContext | None = None,
        middlewares: Iterable[Any] = (),
        background: Iterable[Callable[[], Coroutine[Any, Any, None]]] = (),
    ) -> None:
        self.host = host
        self.port = port
        self.tls = tls
        self.app = web.Application(middlewares=list(middlewares))
        self._runner: web.AppRunner | None = None
        # Run while the server listens (a certificate watch), cancelled when it stops.
        self._background = list(background)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.tls)
        await site.start()
        if self.port == 0:
            # An ephemeral port (tests): report the one the system picked.
            server = site._server
            sockets = getattr(server, "sockets", None) or []
            if sockets:
                self.port = sockets[0].getsockname()[1]
        self._tasks = [asyncio.create_task(run()) for run in self._background]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"


class HealthServer(_Server):
    """``/healthz``, ``/livez``, ``/readyz``, ``/metrics``."""

    def __init__(
        self,
        metrics: Rendered,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: ssl.SSLContext | None = None,
        middlewares: Iterable[Any] = (),
        background: Iterable[Callable[[], Coroutine[Any, Any, None]]] = (),
    ) -> None:
        super().__init__(host, port, tls, middlewares, background)
        self.metrics = metrics
        self.readiness: dict[str, Check] = {}
        self.app.router.add_get("/healthz", self._alive)
        self.app.router.add_get("/livez", self._alive)
        self.app.router.add_get("/readyz", self._ready)
        self.app.router.add_get("/metrics", self._metrics)

    def add_readiness_check(self, name: str, check: Check) -> None:
        self.readiness[name] = check

    async def _alive(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _ready(self, request: web.Request) -> web.Response:
        results = {name: _passes(check) for name, check in self.readiness.items()}
        ready = all(results.values())
        if "verbose" in request.query or not ready:
            lines = [
                f"[{'+' if ok else '-'}]{name} {'ok' if ok else 'failed'}"
                for name, ok in results.items()
            ]
            lines.append("readyz check passed" if ready else "readyz check failed")
            text = "\n".join(lines) + "\n"
        else:
            text = "ok"
        return web.Response(text=text, status=200 if ready else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})


def _passes(check: Check) -> bool:
    try:
        return bool(check())
    except Exception:
        return False


class DebugServer(_Server):
    """Debug pages, on loopback only, for requests that carry ``token``."""

    def __init__(self, token: str, port: int = 10000, profiling: bool = True) -> None:
        super().__init__("127.0.0.1", port, middlewares=[token_guard(token)])
        # enableProfiling: false leaves the heap page out, as it does /debug/pprof upstream.
        if profiling:
            self.add_page("/debug/memory", self._memory)
        self._walking = asyncio.Lock()

    async def _memory(self, request: web.Request) -> web.Response:
        try:
            top = int(request.query.get("top", "25"))
        except ValueError:
            return web.json_response({"error": "top: an integer is accepted"}, status=400)
        async with self._walking:
            reading = await asyncio.to_thread(memory_report, top)
        return web.json_response(reading)

    def add_page(self, path: str, handler: Route) -> None:
        self.app.router.add_get(path, handler)
