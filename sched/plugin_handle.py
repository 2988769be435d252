"""PluginHandle: what the runtime gives a plugin's runtime half to take part in it.

A plugin's decisions live in its module under ``core/plugins``; the part of it that needs
the cluster or the process (a watch, a live table, a page, a task) is its *runtime half*,
in ``sched``, with an ``install(handle)`` function (``sched/plugin_runtimes.py`` lists
them). ``install`` looks at the configuration, and when its plugin is enabled, registers
what it needs through the handle:

* ``watch(resource, handler, ready=False)``: an informer, started with the runtime's own;
  with ``ready`` its first sync holds readiness back (/readyz ``informer-sync-<plural>``),
  as for objects a decision must not go without. ``unwatch`` drops one again (say, when
  RBAC refuses it at start), and then it holds nothing back;
* ``on_pod(hook)``: called with every change of the pod informer, before the runtime
  files the pod (cache, queue), in the order the halves were installed;
* ``before_start(step)``: awaited at start, in order, before the informers start (probing
  access, asking whether a CRD is served);
* ``background(work)``: a task for the life of the process, cancelled at shutdown after
  the binds in flight were drained;
* ``add_pre_bind``: a PreBind (``sched/cycle/prebind.py``) the binding cycle runs before
  each binding POST of a pod it wants, in the order added;
* ``add_debug_page``, ``register_collector`` (/metrics), ``on_bind`` (a bind started and
  ended), and ``live``: the plugins' live tables by plugin name, where the runtime's other
  parts (explain, the web view) find them.

The handle also carries the runtime's parts a half reads (client, configuration, queue,
cache, recorder, leadership).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.registry import Collector, CollectorRegistry

from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.events import EventRecorder
from kubesalvo.sched.informers import Change, Informer
from kubesalvo.sched.informers.models import Pod
from kubesalvo.sched.informers.watch import Resource
from kubesalvo.sched.queue import SchedulingQueue

__all__ = ["PluginHandle"]

PodHook = Callable[[Change[Pod]], None]
BindHook = Callable[[str, str], None]
BindEndHook = Callable[[str, str, bool], None]
Page = Callable[[Any], Awaitable[Any]]


@dataclass
class PluginHandle:
    """The runtime's side of the plugins' runtime halves (see the module docstring)."""

    client: ApiClient
    config: Any  # sched.config.SchedulerConfig
    queue: SchedulingQueue
    cache: SchedulerCache
    recorder: EventRecorder
    registry: CollectorRegistry
    # the runtime's informers: a plugin's watches join them (and /metrics counts them)
    informers: list[Informer[Any]]
    is_leader: Callable[[], bool]
    scheduler_names: frozenset[str]
    add_page: Callable[[str, Page], None]
    live: dict[str, Any] = field(default_factory=dict)
    gates: list[Informer[Any]] = field(default_factory=list)  # watches holding readiness
    pod_hooks: list[PodHook] = field(default_factory=list)
    start_steps: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    bind_started: list[BindHook] = field(default_factory=list)
    bind_ended: list[BindEndHook] = field(default_factory=list)
    pre_binds: list[Any] = field(default_factory=list)  # sched.cycle.prebind.PreBindPlugin
    _work: list[Callable[[], Coroutine[Any, Any, None]]] = field(default_factory=list)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _started: bool = False

    # --- what a plugin's half registers --------------------------------------------------

    def watch(
        self,
        resource: Resource[Any],
        handler: Callable[[Change[Any]], None] | None = None,
        *,
        ready: bool = False,
    ) -> Informer[Any]:
        informer: Informer[Any] = Informer(self.client, resource, handler)
        self.informers.append(informer)
        if ready:
            self.gates.append(informer)
        return informer

    def unwatch(self, informer: Informer[Any]) -> None:
        self.informers.remove(informer)

    def on_pod(self, hook: PodHook) -> None:
        self.pod_hooks.append(hook)

    def before_start(self, step: Callable[[], Awaitable[None]]) -> None:
        self.start_steps.append(step)

    def background(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """``work`` runs from the start (or now, when the runtime runs already)."""
        self._work.append(work)
        if self._started:
            self._tasks.append(asyncio.create_task(work()))

    def add_pre_bind(self, plugin: Any) -> None:
        self.pre_binds.append(plugin)

    def add_debug_page(self, path: str, page: Page) -> None:
        self.add_page(path, page)

    def register_collector(self, collector: Collector) -> None:
        self.registry.register(collector)

    def on_bind(self, started: BindHook, ended: BindEndHook) -> None:
        self.bind_started.append(started)
        self.bind_ended.append(ended)

    # --- what the runtime calls ----------------------------------------------------------

    def pod_changed(self, change: Change[Pod]) -> None:
        for hook in self.pod_hooks:
            hook(change)

    def bind_start(self, namespace: str, name: str) -> None:
        for hook in self.bind_started:
            hook(namespace, name)

    def bind_end(self, namespace: str, name: str, bound: bool) -> None:
        for hook in self.bind_ended:
            hook(namespace, name, bound)

    async def start(self) -> None:
        """Run the halves' start steps, in order."""
        for step in self.start_steps:
            await step()

    def start_background(self) -> None:
        self._started = True
        self._tasks = [asyncio.create_task(work()) for work in self._work]

    async def stop_background(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
