"""The list-then-watch stream of one resource, as nested async generators (as kopf does).

From the outside in:

- ``infinite_watch`` never ends: it runs ``continuous_watch`` and, when that fails, waits
  with exponential backoff (a dropped connection, a silent one past the inactivity
  timeout, 5xx, 429) and resumes from the resourceVersion it holds, or relists at once
  (410 Gone, the only thing that forces a new list).
- ``continuous_watch`` lists (paginated, ``limit``/``continue``) when it holds no
  resourceVersion, yields one ``Listed`` with every object, then watches from the list's
  resourceVersion, and watches again from the last one seen whenever a watch ends
  normally (the server's ``timeoutSeconds``).
- ``watch_once`` is one WATCH request with bookmarks; it yields typed ``Event``s and keeps
  ``WatchState.resource_version`` current, bookmarks included.
- ``iter_lines`` splits the chunked body into lines of any length.

Each watch line is decoded from its raw bytes by msgspec: the envelope first (``type`` and
the raw ``object``), then the object with the resource's own typed decoder, so an ERROR
event's Status and a BOOKMARK's bare metadata are read with their own types.

The stream only produces; applying events to a store is ``informer.py``'s job.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import aiohttp
import msgspec

from kubesalvo.sched.client import ApiClient, ApiError, Status, is_transient
from kubesalvo.sched.informers.models import (
    MetaOnly,
    Namespace,
    Node,
    ObjectList,
    Pod,
    PodDisruptionBudget,
    object_list,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Resource(Generic[T]):
    """A watchable collection: its plural name, its collection path and its Struct."""

    plural: str
    path: str
    type: type[T]

    def collection(self, namespace: str | None) -> str:
        """The path listing every object, or only those of ``namespace``.

        One namespace is watched through the namespaced path, not a ``metadata.namespace``
        field selector: with that selector on the all-namespaces path, kube-apiserver
        1.34 was seen to end a paginated list after its first page (an empty second page
        without a continue token).
        """
        if namespace is None:
            return self.path
        group, _, plural = self.path.rpartition("/")
        return f"{group}/namespaces/{namespace}/{plural}"


PODS = Resource("pods", "/api/v1/pods", Pod)
NODES = Resource("nodes", "/api/v1/nodes", Node)
NAMESPACES = Resource("namespaces", "/api/v1/namespaces", Namespace)
PODDISRUPTIONBUDGETS = Resource(
    "poddisruptionbudgets", "/apis/policy/v1/poddisruptionbudgets", PodDisruptionBudget
)


class Gone(Exception):
    """The resourceVersion we hold is too old (410): only a fresh list can continue."""


@dataclass
class Listed(Generic[T]):
    """A complete list of the collection at ``resource_version``."""

    items: list[T]
    resource_version: str


@dataclass
class Event(Generic[T]):
    """One watch event: ADDED, MODIFIED or DELETED with the object's new state."""

    type: str
    object: T


@dataclass
class WatchSettings:
    page_size: int = 500
    # The server ends each watch after timeoutSeconds; a random value between this and its
    # double spreads reconnections of many clients, as client-go does.
    timeout_seconds: int = 300
    # Silence longer than this (no event, no bookmark) means a dead connection.
    inactivity_timeout: float | None = None
    backoff_initial: float = 0.2
    backoff_max: float = 30.0
    field_selector: str | None = None
    label_selector: str | None = None
    # Watch one namespace only (None: all of them).
    namespace: str | None = None


@dataclass
class WatchState:
    """What survives across watch restarts: the last resourceVersion and counters."""

    resource_version: str | None = None
    lists: int = 0
    watches: int = 0
    errors: int = 0
    last_error: BaseException | None = field(default=None, repr=False)
    # The last list's seconds waiting for its pages and decoding them (the start's split).
    list_seconds: float = 0.0
    decode_seconds: float = 0.0


class _Envelope(msgspec.Struct):
    type: str
    object: msgspec.Raw


class _Names(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class _Named(msgspec.Struct):
    """The least of an object that says which it is (read when the rest does not decode)."""

    metadata: _Names = msgspec.field(default_factory=_Names)


_envelope_decoder = msgspec.json.Decoder(_Envelope)
_named_decoder = msgspec.json.Decoder(_Named)
_meta_decoder = msgspec.json.Decoder(MetaOnly)
_status_decoder = msgspec.json.Decoder(Status)


class Decoders(Generic[T]):
    """The msgspec decoders of one resource: list pages and single objects.

    An object the typed decoder refuses (a field of a type the model does not expect: a
    custom resource with a loose schema, a server newer than the model) is skipped with a
    warning naming it, never allowed to stop the list or the watch: otherwise one such
    object would fail every relist and every re-watch from the same resourceVersion, and
    the informer would never sync again."""

    def __init__(self, resource: Resource[T]) -> None:
        self.plural = resource.plural
        self.page: msgspec.json.Decoder[ObjectList[T]] = msgspec.json.Decoder(
            object_list(resource.type)
        )
        self.raw_page: msgspec.json.Decoder[ObjectList[msgspec.Raw]] = msgspec.json.Decoder(
            ObjectList[msgspec.Raw]
        )
        self.object: msgspec.json.Decoder[T] = msgspec.json.Decoder(resource.type)
        self.skipped = 0

    def decode_page(self, body: bytes) -> ObjectList[T]:
        """One LIST page; items that do not decode are left out (and said)."""
        try:
            return self.page.decode(body)
        except msgspec.ValidationError:
            raw = self.raw_page.decode(body)  # not JSON at all: DecodeError, as before
        items = [item for item in map(self._item, raw.items) if item is not None]
        return ObjectList(metadata=raw.metadata, items=items)

    def decode_object(self, body: bytes | msgspec.Raw) -> T | None:
        """One watched object, or None (said) when it does not decode."""
        return self._item(body)

    def _item(self, body: bytes | msgspec.Raw) -> T | None:
        try:
            return self.object.decode(body)
        except msgspec.ValidationError as error:
            self.skipped += 1
            try:
                meta = _named_decoder.decode(body).metadata
                name = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
            except msgspec.DecodeError:
                name = "(no readable name)"
            log.warning("%s %s skipped: it does not decode: %s", self.plural, name, error)
            return None


async def iter_lines(stream: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """Lines of a chunked body, without aiohttp's 64 KiB line limit (big pods exist)."""
    buffer = b""
    async for chunk in stream.iter_any():
        buffer += chunk
        if b"\n" not in chunk:
            continue
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer


def _params(settings: WatchSettings) -> dict[str, str]:
    params: dict[str, str] = {}
    if settings.field_selector:
        params["fieldSelector"] = settings.field_selector
    if settings.label_selector:
        params["labelSelector"] = settings.label_selector
    return params


async def list_all(
    client: ApiClient,
    resource: Resource[T],
    settings: WatchSettings,
    decoders: Decoders[T],
    state: WatchState | None = None,
) -> Listed[T]:
    """Every object of the collection, page by page, with the list's resourceVersion.

    A continue token can expire (410) between pages when the list is slow; then the whole
    list starts again, since pages from two different snapshots must not be mixed.
    """
    timing = state if state is not None else WatchState()
    for attempt in range(3):
        items: list[T] = []
        params = _params(settings)
        params["limit"] = str(settings.page_size)
        timing.list_seconds = timing.decode_seconds = 0.0
        try:
            while True:
                path = resource.collection(settings.namespace)
                began = time.perf_counter()
                response = await client.request("GET", path, params=params)
                answered = time.perf_counter()
                page = decoders.decode_page(response.body)
                timing.list_seconds += answered - began
                timing.decode_seconds += time.perf_counter() - answered
                items.extend(page.items)
                if not page.metadata.continue_:
                    return Listed(items, page.metadata.resource_version)
                params["continue"] = page.metadata.continue_
        except ApiError as error:
            if error.status != 410 or "continue" not in params or attempt == 2:
                raise
            log.info("list of %s: continue token expired, listing again", resource.plural)
    raise AssertionError("unreachable: the last attempt returns or raises")


async def watch_once(
    client: ApiClient,
    resource: Resource[T],
    settings: WatchSettings,
    state: WatchState,
    decoders: Decoders[T],
) -> AsyncIterator[Event[T]]:
    """One WATCH request from ``state.resource_version``; ends when the server ends it."""
    timeout = random.randint(settings.timeout_seconds, 2 * settings.timeout_seconds)
    params = _params(settings)
    params.update(
        watch="true",
        allowWatchBookmarks="true",
        timeoutSeconds=str(timeout),
        resourceVersion=state.resource_version or "",
    )
    inactivity = settings.inactivity_timeout or timeout + 30.0
    state.watches += 1
    path = resource.collection(settings.namespace)
    async with client.stream(path, params=params, inactivity_timeout=inactivity) as body:
        async for line in iter_lines(body):
            envelope = _envelope_decoder.decode(line)
            kind = envelope.type
            if kind == "BOOKMARK":
                state.resource_version = _meta_decoder.decode(
                    envelope.object
                ).metadata.resource_version
                continue
            if kind == "ERROR":
                status = _status_decoder.decode(envelope.object)
                if status.code == 410:
                    raise Gone(status.message)
                raise ApiError(status.code or 500, bytes(envelope.object))
            obj = decoders.decode_object(envelope.object)
            if obj is None:
                # Skipped (and said); the watch goes on after it rather than hitting it
                # again on every re-watch.
                with contextlib.suppress(msgspec.DecodeError):
                    rv = _named_decoder.decode(envelope.object).metadata.resource_version
                    state.resource_version = rv or state.resource_version
                continue
            rv = obj.metadata.resource_version  # type: ignore[attr-defined]
            yield Event(kind, obj)
            # Advanced only after the consumer took the event: a restart resumes after it.
            state.resource_version = rv


async def continuous_watch(
    client: ApiClient, resource: Resource[T], settings: WatchSettings, state: WatchState
) -> AsyncIterator[Listed[T] | Event[T]]:
    """List if no resourceVersion is held, then watch, re-watching when a watch ends."""
    decoders = Decoders(resource)
    if state.resource_version is None:
        listed = await list_all(client, resource, settings, decoders, state)
        state.lists += 1
        yield listed
        state.resource_version = listed.resource_version
    loop = asyncio.get_running_loop()
    while True:
        started, delivered = loop.time(), 0
        async for event in watch_once(client, resource, settings, state, decoders):
            delivered += 1
            yield event
        if not delivered and loop.time() - started < 1.0:
            # A watch that ends at once with nothing in it: do not spin on the server.
            await asyncio.sleep(settings.backoff_initial)


async def infinite_watch(
    client: ApiClient,
    resource: Resource[T],
    settings: WatchSettings | None = None,
    state: WatchState | None = None,
) -> AsyncIterator[Listed[T] | Event[T]]:
    """The stream of a resource that survives errors: relist on 410, back off on the rest."""
    settings = settings or WatchSettings()
    state = state if state is not None else WatchState()
    delay = settings.backoff_initial
    while True:
        try:
            async for item in continuous_watch(client, resource, settings, state):
                delay = settings.backoff_initial
                yield item
        except Gone as gone:
            _relist(state, gone, resource)
        except ApiError as error:
            if error.status == 410:
                _relist(state, error, resource)
                continue
            if not error.transient:
                # 403 and friends: retrying helps only once RBAC is fixed, so keep trying slowly.
                log.error("watch of %s failed: %s", resource.plural, error)
            await _backoff(state, error, delay, resource, error.retry_after)
            delay = min(delay * 2, settings.backoff_max)
        except Exception as error:
            if not is_transient(error) and not isinstance(error, msgspec.DecodeError):
                raise
            await _backoff(state, error, delay, resource, None)
            delay = min(delay * 2, settings.backoff_max)


def _relist(state: WatchState, error: BaseException, resource: Resource[T]) -> None:
    log.info("watch of %s: %s; listing again", resource.plural, error)
    state.resource_version = None
    state.errors += 1
    state.last_error = error


async def _backoff(
    state: WatchState,
    error: BaseException,
    delay: float,
    resource: Resource[T],
    retry_after: float | None,
) -> None:
    state.errors += 1
    state.last_error = error
    wait = max(delay * random.uniform(0.5, 1.0), retry_after or 0.0)
    log.warning("watch of %s interrupted (%r); retrying in %.2fs", resource.plural, error, wait)
    await asyncio.sleep(wait)
