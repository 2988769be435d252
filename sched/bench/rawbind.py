"""The raw bind ceiling: a process that binds pods to nodes with no scheduling at all.

It watches the unassigned pods addressed to its scheduler name and binds each to the next
schedulable node in a fixed round robin, many binds in flight. What it reaches is what this
API server and machine allow for creating-and-binding pods when deciding costs nothing: a
ceiling for any scheduler. It ignores every constraint, so its placements are not checked.

Run by the harness as ``python -m kubesalvo.sched.bench.rawbind --cluster-dir DIR
--scheduler-name NAME --ready-file FILE``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from kubesalvo.sched.cluster.api import ApiClient, ApiError, Object
from kubesalvo.sched.cluster.controlplane import ControlPlane

WATCH_SECONDS = 300


def schedulable(node: Object) -> bool:
    """Not cordoned and without NoSchedule/NoExecute taints: the nodes a pod with no
    tolerations could use."""
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return False
    return not any(t.get("effect") in ("NoSchedule", "NoExecute") for t in spec.get("taints") or [])


class RawBinder:
    def __init__(self, client: ApiClient, scheduler_name: str, concurrency: int) -> None:
        self.client = client
        self.selector = f"spec.schedulerName={scheduler_name},spec.nodeName="
        self.concurrency = concurrency
        self.queue: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self.seen: set[str] = set()
        self.nodes: Iterator[str] = iter(())

    async def load_nodes(self) -> int:
        listing = await self.client.request("GET", "/api/v1/nodes")
        names = [n["metadata"]["name"] for n in listing["items"] if schedulable(n)]
        if not names:
            raise RuntimeError("no schedulable node to bind to")
        self.nodes = itertools.cycle(sorted(names))
        return len(names)

    def _offer(self, pod: Object) -> None:
        meta = pod["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        if key not in self.seen and not pod["spec"].get("nodeName"):
            self.seen.add(key)
            self.queue.put_nowait((meta["namespace"], meta["name"]))

    async def watch(self, ready: asyncio.Event) -> None:
        params = {"fieldSelector": self.selector}
        version = ""
        while True:
            if not version:  # (re)list: at start, and after 410 Gone
                listing = await self.client.request("GET", "/api/v1/pods", params=params)
                for pod in listing["items"]:
                    self._offer(pod)
                version = listing["metadata"]["resourceVersion"]
                ready.set()
            query = {
                **params,
                "watch": "1",
                "resourceVersion": version,
                "timeoutSeconds": str(WATCH_SECONDS),
            }
            async with self.client.session.get(
                self.client.server + "/api/v1/pods", params=query
            ) as response:
                async for line in response.content:
                    event = msgspec.json.decode(line)
                    if event["type"] == "ERROR":
                        print(f"watch error, relisting: {event['object']}", file=sys.stderr)
                        version = ""
                        break
                    version = event["object"]["metadata"]["resourceVersion"]
                    if event["type"] == "ADDED":
                        self._offer(event["object"])

    async def bind_forever(self) -> None:
        while True:
            namespace, name = await self.queue.get()
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": next(self.nodes)},
            }
            path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
            try:
                await self.client.request("POST", path, body)
            except ApiError as error:
                # 404 (deleted) or 409 (bound by someone else): nothing left to do.
                if error.status not in (404, 409):
                    print(f"bind {namespace}/{name}: {error}", file=sys.stderr)


async def serve(args: argparse.Namespace) -> None:
    cp = ControlPlane.load(args.cluster_dir)
    async with cp.client(args.concurrency) as client:
        binder = RawBinder(client, args.scheduler_name, args.concurrency)
        count = await binder.load_nodes()
        ready = asyncio.Event()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        tasks = [asyncio.create_task(binder.watch(ready))]
        tasks += [asyncio.create_task(binder.bind_forever()) for _ in range(args.concurrency)]
        await ready.wait()
        print(f"raw binder ready: {count} schedulable nodes", flush=True)
        if args.ready_file:
            Path(args.ready_file).write_text("ready\n")
        waiting: list[asyncio.Task[Any]] = [*tasks, asyncio.create_task(stop.wait())]
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for task in done:
            with contextlib.suppress(asyncio.CancelledError):
                task.result()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubesalvo.sched.bench.rawbind")
    parser.add_argument("--cluster-dir", type=Path, required=True)
    parser.add_argument("--scheduler-name", required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--ready-file")
    args = parser.parse_args(argv)
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
