"""A small asynchronous client for a local control plane: create objects in bulk and
wait for a condition over a collection.

It is what ``cluster up`` uses to make fake nodes, and what tests, benchmarks and the
simulator use to load any list of API objects (namespaces, nodes, priority classes, pods,
deployments, ...) concurrently. Resource paths come from the server's discovery, so
every kind the server serves works, custom ones included.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import msgspec

Object = dict[str, Any]
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_ATTEMPTS = 8


class ApiError(RuntimeError):
    """The API server refused a request; ``status`` and ``reason`` come from its Status."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class ApiResource:
    """Where a kind lives: its collection name and whether it is namespaced."""

    api_version: str
    name: str
    namespaced: bool

    def collection(self, namespace: str | None) -> str:
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if self.namespaced:
            return f"{base}/namespaces/{namespace or 'default'}/{self.name}"
        return f"{base}/{self.name}"


def ssl_context(ca_file: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file)
    if ca_file is None:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class ApiClient:
    """One aiohttp session with bearer-token auth; ``concurrency`` bounds requests in flight."""

    def __init__(self, server: str, token: str, ca_file: str | None, concurrency: int = 64) -> None:
        self.server = server.rstrip("/")
        self.concurrency = concurrency
        self._token = token
        self._ca_file = ca_file
        self._session: aiohttp.ClientSession | None = None
        self._resources: dict[str, dict[str, ApiResource]] = {}

    async def __aenter__(self) -> ApiClient:
        connector = aiohttp.TCPConnector(
            ssl=ssl_context(self._ca_file), limit=self.concurrency, limit_per_host=0
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={"Authorization": f"Bearer {self._token}", "Accept": "application/json"},
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("ApiClient is used outside `async with`")
        return self._session

    async def request(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Object:
        """One request, retried on 429/5xx and dropped connections; raises ApiError."""
        data = msgspec.json.encode(body) if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else None
        for attempt in range(_ATTEMPTS):
            try:
                async with self.session.request(
                    method, self.server + path, data=data, params=params, headers=headers
                ) as response:
                    raw = await response.read()
                    if response.status < 300:
                        return msgspec.json.decode(raw) if raw else {}
                    if response.status not in _RETRY_STATUS or attempt == _ATTEMPTS - 1:
                        raise _error(response.status, raw)
                    delay = float(response.headers.get("Retry-After", 0.05 * 2**attempt))
            except (TimeoutError, aiohttp.ClientConnectionError):
                if attempt == _ATTEMPTS - 1:
                    raise
                delay = 0.05 * 2**attempt
            await asyncio.sleep(min(delay, 2.0))
        raise AssertionError("unreachable")

    async def patch(self, path: str, body: Mapping[str, Any]) -> Object:
        """A JSON merge patch of the object at ``path`` (not retried: the caller decides)."""
        async with self.session.patch(
            self.server + path,
            data=msgspec.json.encode(body),
            headers={"Content-Type": "application/merge-patch+json"},
        ) as response:
            raw = await response.read()
            if response.status >= 300:
                raise _error(response.status, raw)
            return msgspec.json.decode(raw) if raw else {}

    async def resource(self, api_version: str, kind: str) -> ApiResource:
        """The resource serving ``kind`` in ``api_version``, from discovery (cached)."""
        if api_version not in self._resources:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            listing = await self.request("GET", path)
            self._resources[api_version] = {
                item["kind"]: ApiResource(api_version, item["name"], item["namespaced"])
                for item in listing.get("resources", [])
                if "/" not in item["name"]  # skip subresources such as pods/status
            }
        try:
            return self._resources[api_version][kind]
        except KeyError:
            message = f"the server serves no {kind} in {api_version}"
            raise ApiError(404, "NotFound", message) from None

    async def create(self, obj: Mapping[str, Any], exist_ok: bool = False) -> Object | None:
        """Creates ``obj``; with ``exist_ok`` an existing object is not an error (returns None)."""
        resource = await self.resource(obj["apiVersion"], obj["kind"])
        path = resource.collection(obj.get("metadata", {}).get("namespace"))
        try:
            return await self.request("POST", path, obj)
        except ApiError as error:
            if exist_ok and error.reason == "AlreadyExists":
                return None
            raise

    async def delete(self, obj: Mapping[str, Any]) -> bool:
        """Deletes ``obj`` (found by its apiVersion, kind, namespace and name); False when
        it was gone already."""
        resource = await self.resource(obj["apiVersion"], obj["kind"])
        meta = obj.get("metadata", {})
        try:
            await self.request(
                "DELETE", f"{resource.collection(meta.get('namespace'))}/{meta['name']}"
            )
        except ApiError as error:
            if error.status == 404:
                return False
            raise
        return True

    async def create_all(self, objects: Iterable[Mapping[str, Any]], exist_ok: bool = False) -> int:
        """Creates every object, ``concurrency`` at a time; returns how many were created.

        Objects are created in order of dependency only as far as the caller orders them
        into separate calls: create namespaces (and priority classes) before what uses them.
        """
        pending = list(objects)
        # Resolve every kind first so that discovery is not raced by many requests.
        for api_version, kind in {(o["apiVersion"], o["kind"]) for o in pending}:
            await self.resource(api_version, kind)
        queue: asyncio.Queue[Mapping[str, Any]] = asyncio.Queue()
        for obj in pending:
            queue.put_nowait(obj)
        created = 0

        async def worker() -> None:
            nonlocal created
            while not queue.empty():
                if await self.create(queue.get_nowait(), exist_ok) is not None:
                    created += 1

        tasks = [asyncio.create_task(worker()) for _ in range(min(self.concurrency, len(pending)))]
        try:
            await asyncio.gather(*tasks)
        finally:
            # On the first failure, stop the other workers and collect their outcomes.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return created

    async def wait_for(
        self,
        collection: str,
        condition: Matching,
        timeout: float,
        params: Mapping[str, str] | None = None,
    ) -> None:
        """Lists then watches ``collection`` until ``condition`` is met.

        Raises TimeoutError after ``timeout`` seconds, saying how far it got.
        """
        deadline = time.monotonic() + timeout
        resource_version = ""
        while True:
            if not resource_version:
                listing = await self.request("GET", collection, params=params)
                condition.reset()
                for item in listing.get("items", []):
                    condition.observe(_key(item), item)
                resource_version = listing["metadata"]["resourceVersion"]
            if condition.met:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{collection}: {condition} after {timeout:.0f}s")
            resource_version = await self._watch(
                collection, params, resource_version, condition, left
            )
            if condition.met:
                return

    async def _watch(
        self,
        collection: str,
        params: Mapping[str, str] | None,
        resource_version: str,
        condition: Matching,
        left: float,
    ) -> str:
        """Feeds watch events to ``condition`` until it is met or the stream ends; returns
        the resourceVersion to resume from ("" to relist after 410 Gone)."""
        query = {
            **(params or {}),
            "watch": "1",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(max(1, int(left))),
        }
        timeout = aiohttp.ClientTimeout(total=left + 5)
        async with self.session.get(
            self.server + collection, params=query, timeout=timeout
        ) as response:
            if response.status >= 300:
                raise _error(response.status, await response.read())
            async for line in response.content:
                event = msgspec.json.decode(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    return "" if obj.get("code") == 410 else resource_version
                resource_version = obj["metadata"]["resourceVersion"]
                if kind == "BOOKMARK":
                    continue
                condition.observe(_key(obj), None if kind == "DELETED" else obj)
                if condition.met:
                    break
        return resource_version


class Matching:
    """Tracks which objects of a collection satisfy ``predicate``; met when every one of
    ``names`` does (when names are given) and at least ``count`` do.

    Kept incrementally, so each watch event costs O(1) however large the collection.
    """

    def __init__(
        self,
        predicate: Callable[[Mapping[str, Any]], bool],
        names: Iterable[str] | None = None,
        count: int = 0,
    ) -> None:
        self.predicate = predicate
        self.names = frozenset(names) if names is not None else None
        self.count = count
        self.matching: set[str] = set()

    def reset(self) -> None:
        self.matching.clear()

    def observe(self, key: str, obj: Mapping[str, Any] | None) -> None:
        if self.names is not None and key not in self.names:
            return
        if obj is not None and self.predicate(obj):
            self.matching.add(key)
        else:
            self.matching.discard(key)

    @property
    def met(self) -> bool:
        wanted = max(self.count, len(self.names) if self.names is not None else 0)
        return len(self.matching) >= wanted

    def __str__(self) -> str:
        wanted = max(self.count, len(self.names) if self.names is not None else 0)
        return f"{len(self.matching)}/{wanted} objects matched"


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if namespace else meta["name"]


def _error(status: int, raw: bytes) -> ApiError:
    try:
        body = msgspec.json.decode(raw)
        return ApiError(status, body.get("reason", ""), body.get("message", raw.decode()))
    except (msgspec.DecodeError, AttributeError):
        return ApiError(status, "", raw.decode(errors="replace")[:500])


def is_ready(node: Mapping[str, Any]) -> bool:
    """A node whose Ready condition is True."""
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_running(pod: Mapping[str, Any]) -> bool:
    return pod.get("status", {}).get("phase") == "Running"
