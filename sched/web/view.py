"""The web view's routes: two static pages and the JSON they poll, on any aiohttp app.

``/ui/`` is the overview (queue, QoS against SLO, gangs, recent bursts) and ``/ui/pod?pod=
NAMESPACE/NAME`` a pod's page; both are plain HTML, CSS and JavaScript from ``static/``
(shipped as package data: no build step, nothing fetched from elsewhere) and read
``/ui/api/overview`` and ``/ui/api/pod``. Every URL the pages use is relative, so the same
pages work on the debug port and behind the secure port's authentication.

The overview is built on the event loop from bounded lists and kept for a second (or 20
times as long as it took to build), so any number of open pages cost the loop a small
share of its time. A pod's node table runs the reference in a
worker thread, one at a time, and is kept a few seconds per pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from importlib import resources
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubesalvo.core.plugins.names import QOS_AWARE
from kubesalvo.sched.explain import explain_pod, pod_devices
from kubesalvo.sched.informers import to_api_dict
from kubesalvo.sched.web.overview import QosHistory, overview
from kubesalvo.sched.web.verdicts import node_table

if TYPE_CHECKING:
    from kubesalvo.sched.app import Scheduler

__all__ = ["PREFIX", "WebView"]

PREFIX = "/ui"
STATIC = {
    "view.css": "text/css",
    "common.js": "text/javascript",
    "overview.js": "text/javascript",
    "pod.js": "text/javascript",
}
OVERVIEW_TTL = 1.0
# An overview that took t seconds is kept for t x this (at least OVERVIEW_TTL).
OVERVIEW_LOOP_SHARE = 20
POD_TTL = 5.0
QOS_SAMPLE_PERIOD = 2.0


def _static(name: str) -> bytes:
    return (resources.files("kubesalvo.sched.web") / "static" / name).read_bytes()


class WebView:
    """The pages and their data for one scheduler; ``add_to`` puts them on a server."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.history = QosHistory()
        self._overviews: dict[str, tuple[float, dict[str, Any]]] = {}
        self._pods: dict[str, tuple[float, dict[str, Any]]] = {}
        self._reference = asyncio.Lock()

    def add_to(self, app: web.Application, *, sample: bool = False) -> None:
        """Add the routes to ``app``; ``sample``: this app's life also runs the QoS sampler
        (one app does, though the pages may be served by several)."""
        router = app.router
        router.add_get(PREFIX, self._to_index)
        router.add_get(f"{PREFIX}/", self._page("index.html"))
        router.add_get(f"{PREFIX}/pod", self._page("pod.html"))
        for name, kind in STATIC.items():
            router.add_get(f"{PREFIX}/static/{name}", self._file(name, kind))
        router.add_get(f"{PREFIX}/api/overview", self._overview)
        router.add_get(f"{PREFIX}/api/pod", self._pod)
        if sample:
            app.cleanup_ctx.append(self._sampling)

    # --- pages ----------------------------------------------------------------------------

    async def _to_index(self, request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(f"{PREFIX}/")

    def _page(self, name: str) -> Any:
        return self._file(name, "text/html")

    def _file(self, name: str, kind: str) -> Any:
        body = _static(name)

        async def serve(request: web.Request) -> web.Response:
            return web.Response(
                body=body, content_type=kind, charset="utf-8", headers={"Cache-Control": "no-cache"}
            )

        return serve

    # --- data -----------------------------------------------------------------------------

    async def _overview(self, request: web.Request) -> web.Response:
        namespace = request.query.get("namespace", "")
        now = time.monotonic()
        kept = self._overviews.get(namespace)
        if kept is None or now >= kept[0]:
            began = time.perf_counter()
            data = overview(self.scheduler, namespace, self.history)
            # Kept for longer when it cost more: its share of the event loop stays small
            # with a queue of tens of thousands of pods.
            spent = time.perf_counter() - began
            kept = (now + max(OVERVIEW_TTL, spent * OVERVIEW_LOOP_SHARE), data)
            # Few filters are live at once; drop the stale ones instead of keeping all.
            self._overviews = {ns: v for ns, v in self._overviews.items() if now < v[0]}
            self._overviews[namespace] = kept
        return web.json_response(kept[1])

    async def _pod(self, request: web.Request) -> web.Response:
        target = request.query.get("pod", "")
        namespace, _, name = target.partition("/")
        if not namespace or not name:
            return web.json_response({"error": "pod=NAMESPACE/NAME is required"}, status=400)
        now = time.monotonic()
        kept = self._pods.get(target)
        if kept is None or now - kept[0] >= POD_TTL:
            # One reference run at a time: many open pod pages queue up here instead of
            # taking every worker thread.
            async with self._reference:
                kept = self._pods.get(target)
                if kept is None or time.monotonic() - kept[0] >= POD_TTL:
                    kept = (time.monotonic(), await self._pod_answer(namespace, name))
                    self._pods = {k: v for k, v in self._pods.items() if now - v[0] < POD_TTL}
                    self._pods[target] = kept
        answer = kept[1]
        return web.json_response(answer, status=404 if answer.get("status") == "unknown" else 200)

    async def _pod_answer(self, namespace: str, name: str) -> dict[str, Any]:
        """``explain``'s answer, with the attempt's preemption and the node table."""
        scheduler = self.scheduler
        answer = await explain_pod(scheduler, namespace, name)
        if answer.get("status") == "unknown":
            return answer
        full = f"{namespace}/{name}"
        pod = scheduler.pods.store.get(full)
        attempt = scheduler.cycle.attempts.get(full)
        if attempt is not None and pod is not None and attempt.uid == pod.metadata.uid:
            answer["preemption"] = attempt.preemption
        if pod is None:
            return answer
        profile = scheduler.config.profile(pod.spec.scheduler_name)
        if profile is None:
            answer["nodeTable"] = {"error": "not scheduled by this scheduler", "rows": []}
            return answer
        # The lists are taken on the event loop; the objects (which the informers replace,
        # never change) become API dicts in the worker thread, as preemption's do.
        nodes = list(scheduler.nodes.store.values())
        pods = [p for p in scheduler.pods.store.values() if p.spec.node_name]
        namespaces = list(scheduler.namespaces.store.values())
        workloads = scheduler.workloads_of({namespace})
        chosen = answer.get("node") if answer.get("status") == "placed" else None
        storage = scheduler.cache.state.storage.copy()  # the volume filters' objects
        devices = pod_devices(scheduler, pod, profile.core)  # on the loop, as explain's
        answer["nodeTable"] = await asyncio.to_thread(
            _node_table,
            scheduler.forms.api,
            pod,
            nodes,
            pods,
            namespaces,
            profile.core,
            chosen,
            workloads,
            storage,
            devices,
        )
        return answer

    # --- QoS history ------------------------------------------------------------------------

    async def _sampling(self, app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(self._sample_forever(), name="web-qos-history")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _sample_forever(self) -> None:
        while True:
            table = self.scheduler.plugins.live.get(QOS_AWARE)
            if table is not None:
                self.history.sample(table.json_rows())
            await asyncio.sleep(QOS_SAMPLE_PERIOD)


def _node_table(
    api: Callable[[Any], dict[str, Any]],
    pod: Any,
    nodes: list[Any],
    pods: list[Any],
    namespaces: list[Any],
    profile: Any,
    chosen: str | None,
    workloads: Any,
    storage: Any = None,
    devices: Any = None,
) -> dict[str, Any]:
    """``node_table`` of the informers' objects (run in a worker thread); ``api`` gives a
    pod's dict (the runtime's memo: sched/informers/forms.py)."""
    return node_table(
        api(pod),
        [to_api_dict(n) for n in nodes],
        [api(p) for p in pods],
        [to_api_dict(ns) for ns in namespaces],
        profile,
        chosen,
        workloads,
        storage,
        devices,
    )
