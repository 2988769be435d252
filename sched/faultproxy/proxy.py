"""A fault-injecting reverse proxy for tests, in front of a real API server (loopback only).

The scheduler talks plain HTTP to the proxy, which forwards to the API server (HTTPS) and
can, on demand:

- fail the next N pod bindings with a 5xx, either before forwarding (the API server
  never saw it) or after (the binding happened but its answer is lost - the case that
  tests exactly-once binding);
- answer the next N matching requests with 429 and a Retry-After header;
- answer the next N watch requests with 410 Gone, as an ERROR event in the stream (what
  the API server does for a too-old resourceVersion) or as an HTTP 410;
- drop every open watch connection abruptly (no final chunk), as a broken network does,
  refuse new watches (503) for as long as a test needs the watch path down, or stall
  them (headers, then silence) to exercise the client's inactivity timeout.

Besides those counted faults, rates apply a fault to a share of all matching requests for
as long as they are set (a seeded random choice per request): 5xx on bindings before or
after forwarding, and 429 with Retry-After; a test drops watches on a timer for the rest.

It counts what it did and records every binding the API server accepted (with the wall
clock time it was sent), so a test can check that each pod was bound exactly once, and
when. Faults are set by assigning to ``faults``.
"""

from __future__ import annotations

import asyncio
import collections
import ipaddress
import logging
import random
import ssl
import time
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from kubesalvo.sched.binder import classify_conflict
from kubesalvo.sched.client import ApiError, status_body

log = logging.getLogger(__name__)

# Request headers passed on; everything hop-by-hop or computed by aiohttp is dropped.
_FORWARDED_REQUEST_HEADERS = ("Authorization", "Content-Type", "Accept", "User-Agent")
_DROPPED_RESPONSE_HEADERS = {
    "content-length",
    "transfer-encoding",
    "content-encoding",
    "connection",
    "keep-alive",
}


@dataclass
class Faults:
    bind_errors: int = 0
    bind_error_status: int = 503
    # True: forward the binding, then answer the error anyway (the answer is "lost").
    bind_error_after_forward: bool = False
    throttle: int = 0
    retry_after: int = 1
    # Only requests whose path contains this are throttled ("" throttles everything).
    throttle_match: str = "/binding"
    gone_watches: int = 0
    # While set, every watch request is answered 503 (the watch path is down).
    refuse_watches: bool = False
    # The next N watches get their headers and then silence (a half-dead connection).
    stall_watches: int = 0
    # True: a 200 stream carrying an ERROR event with code 410; False: an HTTP 410.
    gone_as_event: bool = True
    # Shares (0..1) of requests given a fault while set: bindings failed before they are
    # forwarded, bindings forwarded whose answer is lost, requests matching
    # ``throttle_match`` answered 429.
    bind_error_rate: float = 0.0
    lost_bind_rate: float = 0.0
    throttle_rate: float = 0.0
    seed: int = 0


@dataclass
class ProxyStats:
    forwarded: int = 0
    bind_errors: int = 0
    throttled: int = 0
    gone: int = 0
    dropped: int = 0
    refused: int = 0
    stalled: int = 0
    watches: int = 0
    # Binding path -> how many times the API server answered 201 to it.
    binds_accepted: collections.Counter[str] = field(default_factory=collections.Counter)
    # Binding path -> how many times it was sent on and no answer came back (the API
    # server died or cut the connection), a server error did (etcd timed out), or a
    # conflict that says nothing of the pod did (etcd died under the write: the API
    # server answers any storage error of a binding 409, "rpc error: code =
    # Unavailable", and the write may have been committed): the binding may or may not
    # have been stored.
    binds_uncertain: collections.Counter[str] = field(default_factory=collections.Counter)
    # (wall clock time the binding was received, its path) of every accepted binding.
    bind_times: list[tuple[float, str]] = field(default_factory=list)
    # "namespace/name" of every pod a client deleted through the proxy (the scheduler's
    # preemption victims), whether or not the answer came back.
    pods_deleted: set[str] = field(default_factory=set)


def _unknown_conflict(status: int, body: bytes) -> bool:
    """A binding's 409 that is neither "already assigned" nor a recreated pod: the binder
    retries it as a server error, for the binding may or may not have been stored."""
    return status == 409 and classify_conflict(ApiError(status, body), "") is None


class FaultProxy:
    """``async with FaultProxy(upstream) as proxy:`` then point a client at ``proxy.url``."""

    def __init__(
        self,
        upstream: str,
        *,
        upstream_ssl: ssl.SSLContext | bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        upstream_token: str | None = None,
    ) -> None:
        if not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"the fault proxy listens on loopback only, not {host}")
        self.upstream = upstream.rstrip("/")
        self.host = host
        self.port = port
        self.faults = Faults()
        self.stats = ProxyStats()
        self._upstream_ssl = upstream_ssl
        self._upstream_token = upstream_token
        self._watches: dict[asyncio.Task[object], web.Request] = {}
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None
        self._random = random.Random()
        self._seeded: int | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def __aenter__(self) -> FaultProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._upstream_ssl, limit=0),
            timeout=aiohttp.ClientTimeout(total=None),
            auto_decompress=True,
        )
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{path:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self.drop_watches()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    def drop_watches(self) -> int:
        """Cut every open watch connection without ending its stream; return how many."""
        dropped = 0
        for task, request in list(self._watches.items()):
            if request.transport is not None:
                request.transport.abort()
            task.cancel()
            dropped += 1
        self._watches.clear()
        self.stats.dropped += dropped
        return dropped

    def _roll(self, rate: float) -> bool:
        if rate <= 0.0:
            return False
        if self._seeded != self.faults.seed:
            self._random.seed(self.faults.seed)
            self._seeded = self.faults.seed
        return self._random.random() < rate

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        faults = self.faults
        is_watch = request.query.get("watch") in ("true", "1")
        is_bind = request.method == "POST" and request.path.endswith("/binding")
        matches = faults.throttle_match in request.path
        if (faults.throttle > 0 and matches) or (matches and self._roll(faults.throttle_rate)):
            faults.throttle = max(0, faults.throttle - 1)
            self.stats.throttled += 1
            return web.Response(
                status=429,
                body=status_body(
                    429, "TooManyRequests", "Too many requests, please try again later."
                ),
                headers={
                    "Retry-After": str(faults.retry_after),
                    "Content-Type": "application/json",
                },
            )
        if is_watch and faults.refuse_watches:
            self.stats.refused += 1
            return web.Response(
                status=503,
                body=status_body(503, "ServiceUnavailable", "watches refused by the fault proxy"),
                content_type="application/json",
            )
        if is_watch and faults.stall_watches > 0:
            faults.stall_watches -= 1
            self.stats.stalled += 1
            return await self._stall(request)
        if is_watch and faults.gone_watches > 0:
            faults.gone_watches -= 1
            self.stats.gone += 1
            return await self._gone(request)
        lost = is_bind and self._roll(faults.lost_bind_rate)
        failed = is_bind and not lost and self._roll(faults.bind_error_rate)
        if (is_bind and faults.bind_errors > 0) or lost or failed:
            if not (lost or failed):
                faults.bind_errors -= 1
            self.stats.bind_errors += 1
            if lost or (faults.bind_error_after_forward and not failed):
                await self._forward(request, is_bind=True)
            code = faults.bind_error_status
            return web.Response(
                status=code,
                body=status_body(code, "InternalError", "injected by the fault proxy"),
                content_type="application/json",
            )
        if is_watch:
            return await self._stream(request)
        if request.method == "DELETE":
            parts = request.path.split("/")  # /api/v1/namespaces/{ns}/pods/{name}
            if len(parts) == 7 and parts[1:3] == ["api", "v1"] and parts[5] == "pods":
                self.stats.pods_deleted.add(f"{parts[4]}/{parts[6]}")
        response = await self._forward(request, is_bind=is_bind)
        return response

    def _upstream_headers(self, request: web.Request) -> dict[str, str]:
        headers = {
            k: request.headers[k] for k in _FORWARDED_REQUEST_HEADERS if k in request.headers
        }
        if self._upstream_token and "Authorization" not in headers:
            headers["Authorization"] = f"Bearer {self._upstream_token}"
        return headers

    async def _forward(self, request: web.Request, *, is_bind: bool) -> web.Response:
        assert self._session is not None
        body = await request.read()
        sent = time.time()
        try:
            async with self._session.request(
                request.method,
                self.upstream + request.rel_url.path_qs,
                headers=self._upstream_headers(request),
                data=body or None,
            ) as upstream:
                data = await upstream.read()
        except (aiohttp.ClientError, OSError):
            if is_bind:
                self.stats.binds_uncertain[request.path] += 1
            raise
        self.stats.forwarded += 1
        if is_bind and upstream.status == 201:
            self.stats.binds_accepted[request.path] += 1
            self.stats.bind_times.append((sent, request.path))
        elif is_bind and (upstream.status >= 500 or _unknown_conflict(upstream.status, data)):
            self.stats.binds_uncertain[request.path] += 1
        return web.Response(status=upstream.status, body=data, headers=_copy(upstream.headers))

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        task = asyncio.current_task()
        assert task is not None
        self._watches[task] = request
        self.stats.watches += 1
        try:
            async with self._session.get(
                self.upstream + request.rel_url.path_qs, headers=self._upstream_headers(request)
            ) as upstream:
                response = web.StreamResponse(
                    status=upstream.status, headers=_copy(upstream.headers)
                )
                await response.prepare(request)
                try:
                    async for chunk in upstream.content.iter_any():
                        await response.write(chunk)
                    await response.write_eof()
                except ConnectionResetError:
                    pass  # the watcher went away first: nothing is left to write to
                return response
        finally:
            self._watches.pop(task, None)

    async def _stall(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._watches[task] = request
        try:
            response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
            await response.prepare(request)
            await asyncio.sleep(3600)  # until the client gives up or drop_watches() cuts it
            return response
        finally:
            self._watches.pop(task, None)

    async def _gone(self, request: web.Request) -> web.StreamResponse:
        version = request.query.get("resourceVersion", "")
        message = f"too old resource version: {version} (injected by the fault proxy)"
        if not self.faults.gone_as_event:
            return web.Response(
                status=410,
                body=status_body(410, "Expired", message),
                content_type="application/json",
            )
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        await response.prepare(request)
        event = b'{"type":"ERROR","object":' + status_body(410, "Expired", message) + b"}\n"
        await response.write(event)
        await response.write_eof()
        return response


def _copy(headers: object) -> dict[str, str]:
    return {
        key: value
        for key, value in headers.items()  # type: ignore[attr-defined]
        if key.lower() not in _DROPPED_RESPONSE_HEADERS
    }
