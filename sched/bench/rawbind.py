"""The raw bind ceiling: a process that binds pods to nodes with no scheduling at all.

It binds each unassigned pod addressed to its scheduler name to the next schedulable node
in a round robin. Everything else is kubesalvo's own runtime: the same client (content
type, connection pool, QPS and burst limiter), the same informers and typed decoding (all
active pods and all nodes, as ``kubesalvo run`` watches them) and the same binder (binds
in flight, retries, exactly-once on a lost answer). So what separates kubesalvo from it is
deciding, and what it reaches is the ceiling of this API server and machine for a
scheduler built that way. It ignores every constraint, so its placements are not checked.

With ``--events`` it also writes the one ``Scheduled`` event per bound pod that
kube-scheduler and kubesalvo write, through kubesalvo's event recorder (the same limiter
and writers): the fair ceiling for a scheduler that behaves like kube-scheduler.

Per pod it sends the API server one ``POST pods/NAME/binding`` (and with ``--events`` one
``POST events``), and it receives the pod's watch events like any scheduler.

Run by the harness as ``python -m kubesalvo.sched.bench.rawbind --cluster-dir DIR
--scheduler-name NAME --qps Q --burst B [--events] --ready-file FILE``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from kubesalvo.sched.binder import Binder, BindResult
from kubesalvo.sched.client import ApiClient, load_credentials
from kubesalvo.sched.cluster.controlplane import ControlPlane
from kubesalvo.sched.events import EventRecorder, ObjectRef, RecorderSettings
from kubesalvo.sched.informers import (
    DELETED,
    NODES,
    PODS,
    SYNCED,
    Change,
    Informer,
    WatchSettings,
    wait_synced,
)
from kubesalvo.sched.informers.models import Node, Pod

log = logging.getLogger("kubesalvo.rawbind")

# The pods kubesalvo run watches (finished pods left out), so both decode the same stream.
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
# After the binder gave up on a pod (the API server kept failing), try it again this late.
RETRY_SECONDS = 1.0


def schedulable(node: Node) -> bool:
    """Not cordoned and without NoSchedule/NoExecute taints: the nodes a pod with no
    tolerations could use."""
    if node.spec.unschedulable:
        return False
    return not any(t.effect in ("NoSchedule", "NoExecute") for t in node.spec.taints)


class RawBinder:
    """Binds its pods round robin over the schedulable nodes, as they are seen."""

    def __init__(
        self, client: ApiClient, scheduler_name: str, recorder: EventRecorder | None = None
    ) -> None:
        self.scheduler_name = scheduler_name
        self.recorder = recorder
        self.binder = Binder(client, on_bound=self._bound, on_failed=self._failed)
        self.nodes: Informer[Node] = Informer(client, NODES, self._on_node)
        self.pods: Informer[Pod] = Informer(
            client, PODS, self._on_pod, WatchSettings(field_selector=ACTIVE_PODS)
        )
        self._schedulable: dict[str, None] = {}  # insertion-ordered set
        self._order: list[str] = []
        self._next = 0
        self._waiting: list[Pod] = []  # seen before any schedulable node
        self._started: set[str] = set()  # uids with a bind sent or settled
        self.bound = 0

    def _on_node(self, change: Change[Node]) -> None:
        if change.type == SYNCED or change.obj is None:
            return
        name = change.obj.metadata.name
        if change.type != DELETED and schedulable(change.obj):
            if name not in self._schedulable:
                self._schedulable[name] = None
                self._order = sorted(self._schedulable)
        elif name in self._schedulable:
            del self._schedulable[name]
            self._order = sorted(self._schedulable)
        if self._order and self._waiting:
            waiting, self._waiting = self._waiting, []
            for pod in waiting:
                self._offer(pod)

    def _on_pod(self, change: Change[Pod]) -> None:
        pod = change.obj
        if pod is None or change.type == SYNCED:
            return
        if change.type == DELETED:
            self._started.discard(pod.metadata.uid)
            return
        self._offer(pod)

    def _offer(self, pod: Pod) -> None:
        if pod.spec.scheduler_name != self.scheduler_name or pod.spec.node_name:
            return
        uid = pod.metadata.uid
        if uid in self._started:
            return
        if not self._order:
            self._waiting.append(pod)
            return
        node = self._order[self._next % len(self._order)]
        self._next += 1
        self._started.add(uid)
        self.binder.bind(pod.metadata.namespace, pod.metadata.name, uid, node)

    def _bound(self, result: BindResult) -> None:
        self.bound += 1
        if self.recorder is not None:
            ref = ObjectRef(result.namespace, result.name, result.uid)
            self.recorder.scheduled(ref, result.node, self.scheduler_name)

    def _failed(self, result: BindResult) -> None:
        log.warning("bind %s/%s failed: %s", result.namespace, result.name, result.error)

        def again() -> None:
            self._started.discard(result.uid)
            pod = self.pods.store.get(f"{result.namespace}/{result.name}")
            if pod is not None and pod.metadata.uid == result.uid:
                self._offer(pod)

        asyncio.get_running_loop().call_later(RETRY_SECONDS, again)

    @property
    def informers(self) -> list[Informer[Any]]:
        return [self.nodes, self.pods]

    @property
    def node_count(self) -> int:
        return len(self._order)


async def serve(args: argparse.Namespace) -> None:
    cp = ControlPlane.load(args.cluster_dir)
    credentials = load_credentials(str(cp.kubeconfig))
    async with ApiClient(credentials, qps=args.qps, burst=args.burst) as client:
        recorder = None
        if args.events:
            settings = RecorderSettings(
                component=args.scheduler_name, qps=args.qps, burst=args.burst
            )
            recorder = EventRecorder(client, settings)
            recorder.start()
        raw = RawBinder(client, args.scheduler_name, recorder)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        tasks = [informer.start() for informer in raw.informers]
        await wait_synced(raw.informers)
        events = "; writes a Scheduled event per pod" if recorder else ""
        print(f"raw binder ready: {raw.node_count} schedulable nodes{events}", flush=True)
        if args.ready_file:
            Path(args.ready_file).write_text("ready\n")
        waiting: list[asyncio.Task[object]] = [*tasks, asyncio.create_task(stop.wait())]
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        for informer in raw.informers:
            await informer.stop()
        if recorder is not None:
            await recorder.stop()
        for task in done:
            with contextlib.suppress(asyncio.CancelledError):
                task.result()
        print(f"raw binder stopping: {raw.bound} bound", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubesalvo.sched.bench.rawbind")
    parser.add_argument("--cluster-dir", type=Path, required=True)
    parser.add_argument("--scheduler-name", required=True)
    parser.add_argument("--qps", type=float, default=50.0)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--events", action="store_true", help="write a Scheduled event per pod")
    parser.add_argument("--ready-file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
