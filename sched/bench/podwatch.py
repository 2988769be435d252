"""A burst on the API server: created concurrently with timestamps, watched until bound,
deleted afterwards.

Bind times are when this process sees ``spec.nodeName`` set through its own watch, as
scheduler_perf observes pods through an informer: the same observer for every contender.
The watch decodes only name, namespace and node name (msgspec), so that following tens of
thousands of events costs the measuring process little of the shared CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import aiohttp
import msgspec

from kubesalvo.sched.bench.workload import pod_key
from kubesalvo.sched.cluster.api import ApiClient, ApiError, Object

LIST_PAGE = 5000
# The watch is reopened after this long without ending the measurement.
WATCH_SECONDS = 300


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    resourceVersion: str = ""


class _Spec(msgspec.Struct):
    nodeName: str = ""


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""
    # "continue" is a Python keyword.
    next_page: str = msgspec.field(default="", name="continue")


class _List(msgspec.Struct):
    metadata: _ListMeta
    items: list[_Pod]


class _Event(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _Status(msgspec.Struct):
    code: int = 0


_decode_list = msgspec.json.Decoder(_List).decode
_decode_event = msgspec.json.Decoder(_Event).decode
_decode_pod = msgspec.json.Decoder(_Pod).decode
_decode_status = msgspec.json.Decoder(_Status).decode


@dataclass
class BindWatch:
    """Watches the pods matching ``selector``; records when each is first seen bound."""

    client: ApiClient
    selector: str
    # key -> (time.monotonic() first seen bound, node name)
    bound: dict[str, tuple[float, str]] = field(default_factory=dict)
    # key -> time.monotonic() the pod was first seen at all: the creation time of pods
    # that controllers create (Deployments, Jobs), whose names are not known beforehand.
    seen: dict[str, float] = field(default_factory=dict)
    listed: asyncio.Event = field(default_factory=asyncio.Event)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    relists: int = 0
    # Why each watch stream ended before the measurement did: "ended" (the server closed
    # it) or the client-side error's type.
    rewatches: Counter[str] = field(default_factory=Counter)

    async def run(self) -> None:
        resource_version = ""
        while True:
            if not resource_version:
                resource_version = await self._list()
                self.listed.set()
            try:
                resource_version = await self._watch(resource_version)
                self.rewatches["ended"] += 1
            except (TimeoutError, aiohttp.ClientError) as error:
                self.rewatches[type(error).__name__] += 1
                await asyncio.sleep(0.2)  # resume from the last version seen

    async def resync(self) -> None:
        """Lists the pods again, to catch a bind that a watch stream failed to deliver."""
        await self._list()

    def _observe(self, pod: _Pod, now: float) -> None:
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        if key not in self.seen:
            self.seen[key] = now
            self.changed.set()
        if pod.spec.nodeName and key not in self.bound:
            self.bound[key] = (now, pod.spec.nodeName)
            self.changed.set()

    async def _list(self) -> str:
        params = {"labelSelector": self.selector, "limit": str(LIST_PAGE)}
        while True:
            async with self.client.session.get(
                self.client.server + "/api/v1/pods", params=params
            ) as response:
                raw = await response.read()
                if response.status >= 300:
                    raise ApiError(response.status, "", raw.decode(errors="replace")[:300])
            page = _decode_list(raw)
            now = time.monotonic()
            for pod in page.items:
                self._observe(pod, now)
            if not page.metadata.next_page:
                return page.metadata.resourceVersion
            params = {**params, "continue": page.metadata.next_page}

    async def _watch(self, resource_version: str) -> str:
        query = {
            "labelSelector": self.selector,
            "watch": "1",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_SECONDS),
        }
        timeout = aiohttp.ClientTimeout(total=WATCH_SECONDS + 30, sock_read=WATCH_SECONDS + 30)
        async with self.client.session.get(
            self.client.server + "/api/v1/pods", params=query, timeout=timeout
        ) as response:
            if response.status >= 300:
                raise ApiError(response.status, "", (await response.read()).decode()[:300])
            async for line in response.content:
                event = _decode_event(line)
                if event.type == "ERROR":
                    if _decode_status(event.object).code == 410:
                        self.relists += 1
                        return ""
                    return resource_version
                pod = _decode_pod(event.object)
                resource_version = pod.metadata.resourceVersion or resource_version
                if event.type in ("ADDED", "MODIFIED"):
                    self._observe(pod, time.monotonic())
        return resource_version


@dataclass
class Created:
    """When each pod's create request was sent and answered (time.monotonic())."""

    sent: dict[str, float] = field(default_factory=dict)
    answered: dict[str, float] = field(default_factory=dict)
    first: float = 0.0
    last: float = 0.0


async def create_burst(
    client: ApiClient, pods: Sequence[Object], concurrency: int, created: Created
) -> None:
    """Creates ``pods`` in order, ``concurrency`` requests in flight, recording times in
    ``created`` (so that a cancelled creation keeps what it did); raises on a refusal."""
    pending = iter(pods)

    async def worker() -> None:
        for pod in pending:
            namespace = pod["metadata"].get("namespace") or "default"
            key = pod_key(pod)
            created.sent[key] = time.monotonic()
            await client.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
            created.answered[key] = created.last = time.monotonic()

    created.first = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(pods))))))


# How long after creation ends a scheduler that has bound nothing yet may take to start.
FIRST_BIND_GRACE = 180.0


async def wait_bound(
    watch: BindWatch,
    total: int,
    creation: asyncio.Task[None],
    watching: asyncio.Task[None],
    settle: float,
    timeout: float,
) -> str:
    """Waits until all ``total`` pods are bound ("all bound"), or creation has ended and no
    pod was bound for ``settle`` seconds ("stalled"), or ``timeout`` ("timeout").

    Before its first bind a scheduler has not stalled, it is starting (upstream
    kube-scheduler took more than 20 s to sync its informers over 15,000 nodes while
    10,000 pods were being created): then the window is ``FIRST_BIND_GRACE`` seconds."""
    began = time.monotonic()
    last_progress = began
    seen = -1
    while True:
        if len(watch.bound) >= total:
            return "all bound"
        now = time.monotonic()
        if len(watch.bound) != seen or not creation.done():
            seen, last_progress = len(watch.bound), now
        if watching.done():
            watching.result()  # a failed watch ends the run with its error
            raise RuntimeError("the pod watch ended")
        if creation.done():
            creation.result()  # a refused create ends the run with its error
            window = settle if watch.bound else max(settle, FIRST_BIND_GRACE)
            if now - last_progress > window:
                # Before calling it a stall, make sure no bind was missed by the watch.
                await watch.resync()
                if len(watch.bound) == seen:
                    return "stalled"
                continue
        if now - began > timeout:
            return "timeout"
        watch.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watch.changed.wait(), 0.25)


async def delete_burst(
    client: ApiClient, keys: Sequence[str], selector: str, concurrency: int, timeout: float
) -> float:
    """Deletes the pods ``keys`` (``namespace/name``) at once (grace period 0),
    ``concurrency`` requests in flight, and waits until no pod matches ``selector``;
    returns the seconds it took.

    One request per pod: the API server works through a delete-collection request with a
    single worker by default, about thirty pods a second here.
    """
    began = time.monotonic()
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    pending = iter(keys)

    async def worker() -> None:
        for key in pending:
            namespace, name = key.split("/", 1)
            try:
                await client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", body)
            except ApiError as error:
                if error.status != 404:
                    raise

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(keys))))))
    while time.monotonic() - began < timeout:
        listing = await client.request(
            "GET", "/api/v1/pods", params={"labelSelector": selector, "limit": "1"}
        )
        if not listing.get("items"):
            return time.monotonic() - began
        await asyncio.sleep(0.5)
    raise TimeoutError(f"pods with {selector} still exist {timeout:.0f}s after deletion")
