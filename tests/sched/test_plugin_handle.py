"""PluginHandle: what the plugins' runtime halves register, and how the runtime runs it."""

from __future__ import annotations

import asyncio
from typing import Any

from kubesalvo.sched.informers import ADDED, NODES, Change
from kubesalvo.sched.plugin_handle import PluginHandle


def handle(informers: list[Any] | None = None, pages: dict[str, Any] | None = None) -> PluginHandle:
    # The parts a half reads are not touched by the handle itself.
    return PluginHandle(
        client=None,  # type: ignore[arg-type]
        config=None,
        queue=None,  # type: ignore[arg-type]
        cache=None,  # type: ignore[arg-type]
        recorder=None,  # type: ignore[arg-type]
        registry=None,  # type: ignore[arg-type]
        informers=informers if informers is not None else [],
        is_leader=lambda: True,
        scheduler_names=frozenset({"kubesalvo"}),
        add_page=(pages if pages is not None else {}).__setitem__,
    )


def test_pod_hooks_run_in_the_order_the_halves_registered_them() -> None:
    h = handle()
    seen: list[tuple[str, Any]] = []
    h.on_pod(lambda change: seen.append(("first", change.obj)))
    h.on_pod(lambda change: seen.append(("second", change.obj)))
    h.pod_changed(Change(ADDED, "pod"))  # type: ignore[arg-type]
    assert seen == [("first", "pod"), ("second", "pod")]


def test_a_watch_joins_the_runtimes_informers_and_unwatch_drops_it() -> None:
    informers: list[Any] = ["nodes-of-the-runtime"]
    h = handle(informers)
    informer = h.watch(NODES)
    assert informers == ["nodes-of-the-runtime", informer]
    assert informer.resource is NODES and informer.handlers == []
    h.unwatch(informer)
    assert informers == ["nodes-of-the-runtime"]


def test_a_watch_asked_ready_holds_readiness_and_the_others_do_not() -> None:
    h = handle()
    gate = h.watch(NODES, ready=True)
    extra = h.watch(NODES)
    assert h.gates == [gate] and extra in h.informers


def test_bind_hooks_and_pages_reach_every_registration() -> None:
    pages: dict[str, Any] = {}
    h = handle(pages=pages)
    calls: list[tuple[Any, ...]] = []
    h.on_bind(lambda ns, name: calls.append(("a", ns, name)), lambda *a: calls.append(("a", *a)))
    h.on_bind(lambda ns, name: calls.append(("b", ns, name)), lambda *a: calls.append(("b", *a)))
    h.bind_start("ns", "p")
    h.bind_end("ns", "p", True)
    assert calls == [
        ("a", "ns", "p"),
        ("b", "ns", "p"),
        ("a", "ns", "p", True),
        ("b", "ns", "p", True),
    ]

    async def page(request: Any) -> Any:
        return None

    h.add_debug_page("/debug/x", page)
    assert pages == {"/debug/x": page}


def test_start_steps_run_in_order_and_background_work_lives_until_stopped() -> None:
    h = handle()
    order: list[str] = []
    ticks: list[int] = []

    async def work() -> None:
        while True:
            ticks.append(1)
            await asyncio.sleep(0)

    async def first() -> None:
        order.append("first")
        h.background(work)  # registered by a start step: begins with the others

    async def second() -> None:
        order.append("second")

    h.before_start(first)
    h.before_start(second)

    async def run() -> tuple[int, int]:
        await h.start()
        assert ticks == []  # not before the runtime starts the background work
        h.start_background()
        for _ in range(3):
            await asyncio.sleep(0)
        running = len(ticks)
        await h.stop_background()
        await asyncio.sleep(0)
        return running, len(ticks)

    running, after = asyncio.run(run())
    assert order == ["first", "second"]
    assert running > 0 and after == running
