"""``kubesalvo image-reporter --node NAME [--interval 30s]``: the node agent's command.

Exit codes: 0 after SIGINT or SIGTERM; 2 for a wrong flag (no node name, an interval
that is not a positive Go duration); 1 when the credentials (kubectl's order:
``--kubeconfig``, $KUBECONFIG, ~/.kube/config, else the pod's service account) cannot be
loaded. With ``--once`` it lists and writes once and
exits 0 if the annotation is now current, 1 if listing or patching failed. A failing
crictl or API server never ends the loop: see ``agent``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys

from kubesalvo.core.plugins.image_locality import MAX_ANNOTATION_BYTES, ReportedImage
from kubesalvo.sched.client import ApiClient, Credentials, CredentialsError, load_credentials
from kubesalvo.sched.config.decode import parse_duration
from kubesalvo.sched.image_reporter.agent import ImageReporter, Outcome
from kubesalvo.sched.image_reporter.crictl import list_images

__all__ = ["configure", "main"]

log = logging.getLogger("kubesalvo.image_reporter")

EXIT_FLAGS = 2
EXIT_CREDENTIALS = 1
# Small: one patch per change, on every node of the cluster.
_QPS, _BURST = 1.0, 5


def positive_duration(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: {error}") from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive duration, e.g. 30s")
    return seconds


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--node",
        default=os.environ.get("NODE_NAME") or None,
        help="the Node to annotate: the one this runs on (default: $NODE_NAME)",
    )
    parser.add_argument(
        "--interval",
        type=positive_duration,
        default=positive_duration("30s"),
        metavar="DURATION",
        help="how often to list the images, as a Go duration (default 30s)",
    )
    parser.add_argument(
        "--crictl", default="crictl", help="the crictl binary (default: crictl on PATH)"
    )
    parser.add_argument(
        "--runtime-endpoint",
        help="the CRI socket crictl asks, e.g. unix:///run/containerd/containerd.sock "
        "(default: crictl's own, from $CONTAINER_RUNTIME_ENDPOINT or /etc/crictl.yaml)",
    )
    parser.add_argument(
        "--crictl-timeout",
        type=positive_duration,
        default=positive_duration("30s"),
        metavar="DURATION",
        help="how long one crictl call may take (default 30s)",
    )
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=MAX_ANNOTATION_BYTES,
        help=f"largest annotation written; the smallest images are left out past it "
        f"(default {MAX_ANNOTATION_BYTES})",
    )
    parser.add_argument("--once", action="store_true", help="list and write once, then exit")
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster credentials)",
    )
    parser.add_argument(
        "--incluster-root",
        help="without a kubeconfig, read the service account under this folder instead of /",
    )
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=0, metavar="N")
    parser.add_argument("--log-format", choices=("json", "text"), default="text")


def main(args: argparse.Namespace) -> int:
    from kubesalvo.sched.logs import setup_logging

    setup_logging(args.verbosity, args.log_format)
    if not args.node:
        print("kubesalvo image-reporter: --node (or $NODE_NAME) is required", file=sys.stderr)
        return EXIT_FLAGS
    if args.max_bytes < 256:
        print("kubesalvo image-reporter: --max-bytes must be at least 256", file=sys.stderr)
        return EXIT_FLAGS
    try:
        credentials = load_credentials(args.kubeconfig, incluster_root=args.incluster_root)
    except CredentialsError as error:
        print(f"kubesalvo image-reporter: cannot load credentials from {error}", file=sys.stderr)
        return EXIT_CREDENTIALS
    return asyncio.run(_serve(args, credentials))


async def _serve(args: argparse.Namespace, credentials: Credentials) -> int:
    client = ApiClient(credentials, qps=_QPS, burst=_BURST)

    async def lister() -> list[ReportedImage]:
        return await list_images(args.crictl, args.runtime_endpoint, args.crictl_timeout)

    reporter = ImageReporter(
        client, args.node, lister, interval=args.interval, limit=args.max_bytes
    )
    try:
        if args.once:
            outcome = await reporter.step()
            return 0 if outcome in (Outcome.WRITTEN, Outcome.UNCHANGED) else 1
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, _on_signal, reporter, task, signum)
        with contextlib.suppress(asyncio.CancelledError):
            await reporter.run()
        log.info("image reporter stopped after %d patches", reporter.patches)
        return 0
    finally:
        await client.close()


def _on_signal(reporter: ImageReporter, task: asyncio.Task[object] | None, signum: int) -> None:
    log.info("received %s: stopping", signal.Signals(signum).name)
    reporter.stop()
    # A crictl call or patch in flight is abandoned (crictl is killed), not waited for.
    if task is not None:
        task.cancel()
