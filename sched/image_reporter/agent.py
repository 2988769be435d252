"""The reporter's loop: list the node's images, patch the Node's annotation when they change.

Each step lists the images (``Lister``: crictl in production, anything returning
``ReportedImage``s in tests) and compares the set with the one last written; only a
different set is written, as a JSON merge patch of ``metadata.annotations`` on the Node
(the one verb its RBAC grants: ``patch`` on nodes). The first step always writes, since
the reporter may not read the Node to see what an earlier run left there.

Nothing stops the loop but :meth:`ImageReporter.stop`: a failed list or patch is one
log line saying what failed and what to check, and the step is retried after a backoff
(1s, doubling, at most the interval), without losing what is still to be written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import urllib.parse
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from enum import Enum

import aiohttp

from kubesalvo.core.plugins.image_locality import (
    ANNOTATION,
    MAX_ANNOTATION_BYTES,
    ReportedImage,
    encode_annotation,
)
from kubesalvo.sched.client import ApiClient, ApiError
from kubesalvo.sched.image_reporter.crictl import ListError

__all__ = ["ImageReporter", "Lister", "Outcome"]

log = logging.getLogger("kubesalvo.image_reporter")

Lister = Callable[[], Awaitable[list[ReportedImage]]]
_FIRST_RETRY = 1.0
_PATCH_TYPE = "application/merge-patch+json"


class Outcome(Enum):
    """What one step did."""

    WRITTEN = "written"
    UNCHANGED = "unchanged"
    LIST_FAILED = "list-failed"
    PATCH_FAILED = "patch-failed"


def _patch_hint(error: ApiError, node: str) -> str:
    if error.status == 403 and "ValidatingAdmissionPolicy" in error.message:
        # RBAC allowed it; the overlay's admission policy did not.
        return (
            f" (the admission policy allows only node {node}'s own {ANNOTATION} annotation,"
            " with a token bound to a pod on that node: --node must be spec.nodeName)"
        )
    if error.status == 403:
        return " (its service account needs `patch` on nodes: deploy/overlays/image-reporter)"
    if error.status == 404:
        return f" (no node {node!r}: --node must name the node this runs on, spec.nodeName)"
    return ""


class ImageReporter:
    """Keeps one Node's image annotation equal to what the runtime lists."""

    def __init__(
        self,
        client: ApiClient,
        node: str,
        lister: Lister,
        *,
        interval: float = 30.0,
        limit: int = MAX_ANNOTATION_BYTES,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, got {interval}")
        self.client = client
        self.node = node
        self.lister = lister
        self.interval = interval
        self.limit = limit
        self.clock = clock
        self.written: frozenset[ReportedImage] | None = None
        self.patches = 0  # annotations written by this process
        self._stop = asyncio.Event()

    async def step(self) -> Outcome:
        """List once and write the annotation if the set changed; never raises for a
        failed list or patch (it logs them)."""
        try:
            images = await self.lister()
        except ListError as error:
            log.warning("cannot list the images of node %s: %s", self.node, error)
            return Outcome.LIST_FAILED
        current = frozenset(images)
        if current == self.written:
            log.debug("node %s: %d images, unchanged", self.node, len(current))
            return Outcome.UNCHANGED
        value, kept = encode_annotation(current, self.clock(), self.limit)
        body = json.dumps({"metadata": {"annotations": {ANNOTATION: value}}}).encode()
        path = "/api/v1/nodes/" + urllib.parse.quote(self.node, safe="")
        try:
            await self.client.request("PATCH", path, body=body, content_type=_PATCH_TYPE)
        except ApiError as error:
            log.warning(
                "cannot patch node %s: %s%s", self.node, error, _patch_hint(error, self.node)
            )
            return Outcome.PATCH_FAILED
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            log.warning(
                "cannot reach the API server to patch node %s: %s",
                self.node,
                str(error) or type(error).__name__,
            )
            return Outcome.PATCH_FAILED
        self.written = current
        self.patches += 1
        log.info(
            "node %s: %s now lists %d images (%d bytes)", self.node, ANNOTATION, kept, len(value)
        )
        if kept < len(current):
            log.warning(
                "node %s: left out the %d smallest of %d images to keep %s under %d bytes",
                self.node,
                len(current) - kept,
                len(current),
                ANNOTATION,
                self.limit,
            )
        return Outcome.WRITTEN

    async def run(self) -> None:
        """Step every interval until stopped; after a failure, retry sooner (backoff)."""
        log.info("reporting the images of node %s every %gs", self.node, self.interval)
        retry = _FIRST_RETRY
        while not self._stop.is_set():
            outcome = await self.step()
            if outcome in (Outcome.LIST_FAILED, Outcome.PATCH_FAILED):
                wait = min(retry, self.interval)
                retry = min(retry * 2, self.interval)
                log.info("retrying in %gs", wait)
            else:
                wait, retry = self.interval, _FIRST_RETRY
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), wait)

    def stop(self) -> None:
        self._stop.set()
