"""``kubesalvo cluster build|up|down``: the local control plane from the command line."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from kubesalvo.sched.cluster import build, controlplane, metrics_server, nodes

console = Console(stderr=True, highlight=False, soft_wrap=True)
out = Console(highlight=False, soft_wrap=True)


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    default_dir = controlplane.default_dir()

    build_parser = sub.add_parser(
        "build",
        help="compile etcd, Kubernetes and kwok into the binary cache",
        description=f"Compile the upstream binaries with Go into {build.cache_root()}/bin/"
        "<versions>/ (KUBESALVO_CACHE moves the cache). Skipped when already built.",
    )
    build_parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    _kubernetes_option(build_parser)

    up = sub.add_parser(
        "up",
        help="start etcd, kube-apiserver, kube-controller-manager and kwok with fake nodes",
        description="Start a local control plane on loopback ports, write DIR/kubeconfig and "
        "create fake nodes that kwok keeps Ready. Builds the binaries first if needed.",
    )
    up.add_argument("--nodes", type=int, default=100, help="fake nodes to create (default 100)")
    up.add_argument("--seed", type=int, default=0, help="seed of the synthetic fleet")
    up.add_argument(
        "--dir", type=Path, default=default_dir, help=f"state folder (default {default_dir})"
    )
    up.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for each phase (default 300)"
    )
    up.add_argument(
        "--metrics-server",
        action="store_true",
        help="also build and run metrics-server (metrics.k8s.io through the aggregation "
        "layer, for HorizontalPodAutoscalers and the extender's safe agent); pods set the "
        "usage kwok emulates with the annotations kwok.x-k8s.io/usage-cpu and -memory",
    )
    _kubernetes_option(up)

    down = sub.add_parser(
        "down",
        help="stop the control plane and remove its files",
        description="Stop every process `cluster up` started in DIR and remove its files.",
    )
    down.add_argument(
        "--dir", type=Path, default=default_dir, help=f"state folder (default {default_dir})"
    )


def _kubernetes_option(parser: argparse.ArgumentParser) -> None:
    modules = build.kubernetes_modules()
    default, *others = modules
    parser.add_argument(
        "--kubernetes",
        metavar="VERSION",
        help=f"the Kubernetes release: {default} (default, what the tests use)"
        + "".join(f" or {version}" for version in others)
        + "; each is built and cached apart",
    )


def main(args: argparse.Namespace) -> int:
    if getattr(args, "kubernetes", None) is not None:
        try:
            build.shipped_versions(kubernetes=args.kubernetes)
        except build.BuildError as error:
            console.print(f"[red]error:[/red] {error}")
            return 2
    try:
        if args.action == "build":
            ensure_binaries(force=args.force, kubernetes=args.kubernetes)
        elif args.action == "up":
            _up(args)
        else:
            _down(args.dir)
    except (build.BuildError, controlplane.StartError, TimeoutError) as error:
        console.print(f"[red]error:[/red] {error}")
        return 1
    return 0


def ensure_binaries(force: bool = False, kubernetes: str | None = None) -> Path:
    """The binary folder of ``kubernetes`` (None: the default release), built (with a
    progress display) if it is not complete."""
    folder = build.bin_dir(build.shipped_versions(kubernetes=kubernetes))
    if build.is_complete(folder) and not force:
        console.print(f"binaries are built: {folder}")
        return folder
    started = time.monotonic()
    columns = (
        SpinnerColumn(finished_text="✓"),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console) as progress:
        tasks: dict[str, TaskID] = {}

        def report(title: str, seconds: float | None) -> None:
            if seconds is None:
                tasks[title] = progress.add_task(f"go build {title}", total=1)
            else:
                progress.update(tasks[title], completed=1)

        folder = build.build(force=force, progress=report, kubernetes=kubernetes)
    console.print(f"built in {time.monotonic() - started:.0f}s: {folder}")
    return folder


def _up(args: argparse.Namespace) -> None:
    bin_dir = ensure_binaries(kubernetes=args.kubernetes)
    if args.metrics_server:
        console.print(f"metrics-server {metrics_server.version()}: building if not cached")
        args.metrics_binary = metrics_server.build()
    started = time.monotonic()

    def say(message: str) -> None:
        console.print(f"[dim]{time.monotonic() - started:6.1f}s[/dim] {message}")

    cp = asyncio.run(_start_with_nodes(args, bin_dir, say))
    say(f"control plane ready with {args.nodes} Ready nodes")
    out.print(
        f"""
kube-apiserver {cp.server}   logs in {cp.dir / "logs"}

  export KUBECONFIG={cp.kubeconfig}
  {cp.kubectl} get nodes

Stop it with: kubesalvo cluster down --dir {cp.dir}"""
    )


async def _start_with_nodes(
    args: argparse.Namespace, bin_dir: Path, say: controlplane.Progress
) -> controlplane.ControlPlane:
    cp = await controlplane.start(args.dir, bin_dir, progress=say, timeout=args.timeout)
    if args.nodes:
        say(f"creating {args.nodes} fake nodes")
        try:
            async with cp.client(nodes.NODE_CONCURRENCY) as client:
                await nodes.add_synthetic_nodes(client, args.nodes, args.seed, args.timeout)
        except BaseException:
            controlplane.stop(cp.dir)
            raise
    if args.metrics_server:
        say("starting metrics-server (ready after its first scrape)")
        try:
            await controlplane.start_metrics_server(cp, args.metrics_binary, args.timeout)
        except BaseException:
            controlplane.stop(cp.dir)
            raise
    return cp


def _down(folder: Path) -> None:
    stopped = controlplane.stop(folder)
    if stopped is None:
        console.print(f"no control plane recorded in {folder}")
    else:
        console.print(f"stopped {', '.join(stopped.pids)} and removed {folder}")
