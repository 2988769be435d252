"""The health, readiness, metrics and debug servers, on an ephemeral loopback port; and
readiness following real informers as they sync with the API server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import tracemalloc

import aiohttp
import pytest
from aiohttp import web

from kubesalvo.sched.informers import NODES, PODS, Informer
from kubesalvo.sched.memory import memory_report
from kubesalvo.sched.metrics import SchedulerMetrics
from kubesalvo.sched.server import DebugServer, HealthServer


@pytest.fixture
async def health():
    server = HealthServer(SchedulerMetrics(), host="127.0.0.1", port=0)
    state = {"synced": False}
    server.add_readiness_check("informers-synced", lambda: state["synced"])
    await server.start()
    try:
        yield server, state
    finally:
        await server.stop()


TOKEN = "test-debug-token"


async def get(url: str, token: str | None = TOKEN) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers=headers) as response,
    ):
        return response.status, await response.text()


async def test_liveness_answers_ok(health):
    server, _ = health
    assert await get(server.url + "/healthz") == (200, "ok")
    assert await get(server.url + "/livez") == (200, "ok")


async def test_readiness_fails_until_the_informers_have_synced(health):
    server, state = health
    status, text = await get(server.url + "/readyz")
    assert status == 503
    assert "[-]informers-synced failed" in text
    state["synced"] = True
    assert await get(server.url + "/readyz") == (200, "ok")
    status, text = await get(server.url + "/readyz?verbose")
    assert status == 200 and "[+]informers-synced ok" in text


async def test_a_readiness_check_that_raises_counts_as_failed(health):
    server, _ = health

    def broken() -> bool:
        raise RuntimeError("boom")

    server.add_readiness_check("broken", broken)
    status, text = await get(server.url + "/readyz")
    assert status == 503 and "[-]broken failed" in text


async def test_metrics_are_served_in_prometheus_text(health):
    server, _ = health
    server.metrics.observe_attempt("scheduled", "kubesalvo", 0.004)
    status, text = await get(server.url + "/metrics")
    assert status == 200
    assert 'scheduler_schedule_attempts_total{profile="kubesalvo",result="scheduled"} 1.0' in text


async def test_debug_pages_are_served_on_loopback():
    debug = DebugServer(TOKEN, port=0)

    async def queue_page(request: web.Request) -> web.Response:
        return web.Response(text="activeQ: 0")

    debug.add_page("/debug/queue", queue_page)
    await debug.start()
    try:
        assert debug.host == "127.0.0.1"
        assert await get(debug.url + "/debug/queue") == (200, "activeQ: 0")
    finally:
        await debug.stop()


class Retained:
    """A type of this test's own, so that its count in the reading is known."""


async def test_the_memory_page_counts_live_objects_by_type():
    debug = DebugServer(TOKEN, port=0)
    kept = [Retained() for _ in range(3000)]
    await debug.start()
    try:
        status, body = await get(debug.url + "/debug/memory?top=500")
        assert status == 200
        reading = json.loads(body)
        counts = {row["type"]: row["count"] for row in reading["objectsByType"]}
        assert counts[f"{__name__}.Retained"] == len(kept)
        assert len(reading["objectsByType"]) <= 500
        assert reading["rssBytes"] > 0 and reading["peakRssBytes"] >= reading["rssBytes"] // 2
        assert reading["trackedObjects"] >= len(kept)
        assert len(reading["gcCollections"]) == 3
        assert reading["traced"] is None  # not run with PYTHONTRACEMALLOC

        status, body = await get(debug.url + "/debug/memory?top=2")
        assert status == 200 and len(json.loads(body)["objectsByType"]) == 2
    finally:
        await debug.stop()


async def test_the_memory_page_names_the_source_lines_when_tracing():
    tracemalloc.start()
    try:
        held = [bytearray(4096) for _ in range(256)]  # 1 MiB from one line
        reading = memory_report(top=5)
    finally:
        tracemalloc.stop()
    assert reading["traced"]["currentBytes"] >= 4096 * len(held)
    here = f"{__file__}:"
    assert any(row["where"].startswith(here) and row["bytes"] >= 2**20
               for row in reading["traced"]["lines"])  # fmt: skip


async def test_the_memory_page_walks_the_heap_off_the_event_loop(monkeypatch):
    """The walk takes seconds on a big heap: it runs in a worker thread, one at a time,
    so the event loop (binds, the Lease renewal) keeps running meanwhile."""
    from kubesalvo.sched import server as server_module

    walkers: list[int] = []
    real = server_module.memory_report

    def recording(top: int) -> dict:
        walkers.append(threading.get_ident())
        return real(top)

    monkeypatch.setattr(server_module, "memory_report", recording)
    debug = DebugServer(TOKEN, port=0)
    await debug.start()
    try:
        answers = await asyncio.gather(*(get(debug.url + "/debug/memory?top=3") for _ in range(2)))
    finally:
        await debug.stop()
    assert [status for status, _ in answers] == [200, 200]
    assert len(walkers) == 2
    assert threading.get_ident() not in walkers


def test_the_heap_walk_stops_counting_at_its_time_budget():
    kept = [Retained() for _ in range(30_000)]
    reading = memory_report(top=5, budget=0.0)
    assert not reading["countComplete"]
    assert 0 < reading["countedObjects"] < reading["trackedObjects"]
    assert sum(row["count"] for row in reading["objectsByType"]) <= reading["countedObjects"]
    whole = memory_report(top=5)
    assert whole["countComplete"] and whole["countedObjects"] == whole["trackedObjects"]
    assert whole["trackedObjects"] >= len(kept)


async def test_without_profiling_the_memory_page_is_not_served():
    debug = DebugServer(TOKEN, port=0, profiling=False)
    await debug.start()
    try:
        status, _ = await get(debug.url + "/debug/memory")
    finally:
        await debug.stop()
    assert status == 404


async def test_a_bad_top_on_the_memory_page_is_a_400_with_a_json_error():
    debug = DebugServer(TOKEN, port=0)
    await debug.start()
    try:
        status, body = await get(debug.url + "/debug/memory?top=many")
        assert status == 400
        assert json.loads(body) == {"error": "top: an integer is accepted"}
    finally:
        await debug.stop()


@pytest.mark.integration
async def test_readiness_turns_ok_once_real_informers_have_synced(api, eventually):
    server = HealthServer(SchedulerMetrics(), host="127.0.0.1", port=0)
    informers = [Informer(api, NODES), Informer(api, PODS)]
    server.add_readiness_check(
        "informers-synced", lambda: all(i.synced.is_set() for i in informers)
    )
    await server.start()
    try:
        assert (await get(server.url + "/readyz"))[0] == 503
        for informer in informers:
            informer.start()
        await asyncio.wait_for(asyncio.gather(*(i.synced.wait() for i in informers)), 20)
        assert await get(server.url + "/readyz") == (200, "ok")
    finally:
        for informer in informers:
            await informer.stop()
        await server.stop()


def test_the_startup_heap_is_frozen_out_of_the_collectors_passes_and_young_ones_are_rarer():
    # In a process of its own: a freeze lasts for the rest of the process that makes it.
    script = """
import gc, json
from kubesalvo.sched.memory import (
    YOUNG_THRESHOLD, CollectorPauses, collect_young_less_often, freeze_startup_heap,
    memory_report,
)

class Kept:
    pass

kept = [Kept() for _ in range(5000)]
before = memory_report(top=500)
passes = []
timer = CollectorPauses(lambda generation, seconds: passes.append((generation, seconds)))
timer.start()
collect_young_less_often()
frozen = freeze_startup_heap()
after = memory_report(top=500)
gc.collect()
timer.stop()
gc.collect()
print(json.dumps({
    "frozen": frozen, "threshold": gc.get_threshold(), "young": YOUNG_THRESHOLD,
    "before": {r["type"]: r["count"] for r in before["objectsByType"]},
    "after": {r["type"]: r["count"] for r in after["objectsByType"]},
    "frozen_reported": after["frozenObjects"], "passes": passes,
}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    out = json.loads(done.stdout)
    assert out["frozen"] == out["frozen_reported"] >= 5000
    assert out["threshold"][0] == out["young"]
    assert out["before"]["__main__.Kept"] == 5000
    assert "__main__.Kept" not in out["after"]  # frozen objects are only counted
    # the freeze's own collection and the one after it, not the one after stop()
    assert [generation for generation, _ in out["passes"]] == [2, 2]
    assert all(seconds >= 0 for _, seconds in out["passes"])
