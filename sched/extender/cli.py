"""``kubesalvo extender``: serve kube-scheduler's extender protocol with kubesalvo's agents.

Exit codes: 0 after SIGINT or SIGTERM (requests in flight finish first), 2 for a
configuration (or a policy rules file) that is refused, with the field path and why on
stderr, or for TLS flags that would leave /bind and /preempt open (see ``guard``), 1 when
the credentials cannot be loaded or the address cannot be listened on (one line, no
traceback). It looks for them in kubectl's order
(``--kubeconfig``, $KUBECONFIG, ~/.kube/config, the pod's service account); when none of
them is there it runs without an API server (see ``service``).

``--metrics-secure-port N`` also serves ``/metrics`` (and the health paths) as the
scheduler's secure port does: HTTPS on ``--metrics-bind-address`` with a self-signed
certificate, the caller's token checked with a TokenReview and a SubjectAccessReview
(``get`` on the non-resource URL ``/metrics``), so that Prometheus can scrape an extender
whose protocol port listens on loopback. It needs the API server's credentials.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import ssl
import sys
from typing import Any

from kubesalvo.sched.client import ApiClient, Credentials, CredentialsError, load_credentials
from kubesalvo.sched.extender.config import ConfigError, ExtenderConfig, load_config
from kubesalvo.sched.extender.guard import GuardError, ServingGuard
from kubesalvo.sched.extender.service import Extender
from kubesalvo.sched.kubeconfig import choose_kubeconfig
from kubesalvo.sched.memory import collect_young_less_often, freeze_startup_heap
from kubesalvo.sched.server import HealthServer
from kubesalvo.sched.serving.build import health_servers
from kubesalvo.sched.serving.options import OptionsError, ServingOptions

__all__ = ["configure", "main"]

log = logging.getLogger("kubesalvo.extender")

EXIT_CONFIG = 2
EXIT_CREDENTIALS = 1
EXIT_SERVE = 1
DEFAULT_LISTEN = "127.0.0.1:8888"


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (e.g. {DEFAULT_LISTEN})")
    return host.strip("[]"), int(port)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="ExtenderConfiguration file (default: congestion, safe)")
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster "
        "credentials, else no API server)",
    )
    parser.add_argument(
        "--listen",
        type=parse_listen,
        default=parse_listen(DEFAULT_LISTEN),
        metavar="HOST:PORT",
        help=f"address to serve on (default {DEFAULT_LISTEN}; port 0 picks a free one)",
    )
    parser.add_argument(
        "--tls-cert-file",
        help="serve HTTPS with this certificate (PEM; reloaded when the file changes)",
    )
    parser.add_argument("--tls-private-key-file", help="the key of --tls-cert-file (PEM)")
    parser.add_argument(
        "--client-ca-file",
        help="/bind and /preempt need a client certificate signed by this CA (PEM), as "
        "kube-scheduler sends with tlsConfig.certFile/keyFile; required to listen beyond "
        "loopback",
    )
    parser.add_argument(
        "--metrics-secure-port",
        type=int,
        default=0,
        metavar="PORT",
        help="also serve /metrics over HTTPS with delegated authentication and "
        "authorization on this port (default 0: off)",
    )
    parser.add_argument(
        "--metrics-bind-address",
        default="0.0.0.0",
        help="the address of --metrics-secure-port (default %(default)s)",
    )
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=0, metavar="N")
    parser.add_argument("--log-format", choices=("json", "text"), default="text")


class MetricsPortError(OSError):
    """The metrics port could not be listened on (``cause`` says why)."""

    def __init__(self, host: str, port: int, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause))
        self.host = host
        self.port = port


def _credentials(kubeconfig: str | None) -> Credentials | None:
    try:
        return load_credentials(kubeconfig)
    except CredentialsError:
        # Only the last resort may be missing: outside a pod, no API server at all.
        if choose_kubeconfig(kubeconfig).in_cluster:
            return None
        raise


def main(args: argparse.Namespace) -> int:
    from kubesalvo.sched.logs import setup_logging

    setup_logging(args.verbosity, args.log_format)
    try:
        config = load_config(args.config)
    except ConfigError as error:
        print(f"kubesalvo extender: {error}", file=sys.stderr)
        return EXIT_CONFIG
    guard = ServingGuard(args.tls_cert_file, args.tls_private_key_file, args.client_ca_file)
    try:
        guard.check(args.listen[0])
    except GuardError as error:
        print(f"kubesalvo extender: {error}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        metrics_serving = ServingOptions(
            bind_address=args.metrics_bind_address, secure_port=args.metrics_secure_port
        )
    except OptionsError as error:
        # The options name the scheduler's flags; here they are the --metrics-* ones.
        text = str(error).replace("--secure-port", "--metrics-secure-port")
        text = text.replace("--bind-address", "--metrics-bind-address")
        print(f"kubesalvo extender: {text}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        credentials = _credentials(args.kubeconfig)
    except CredentialsError as error:
        print(f"kubesalvo extender: cannot load credentials from {error}", file=sys.stderr)
        return EXIT_CREDENTIALS
    if credentials is None and metrics_serving.secure_port:
        print(
            "kubesalvo extender: --metrics-secure-port needs the API server's credentials "
            "(it asks it who a caller is and what they may read)",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()
    try:
        asyncio.run(_serve(config, credentials, args.listen, guard, metrics_serving))
    except (OSError, ssl.SSLError) as error:
        host, port = (
            (error.host, error.port) if isinstance(error, MetricsPortError) else args.listen
        )
        reason = error.strerror or str(error) if isinstance(error, OSError) else str(error)
        print(f"kubesalvo extender: cannot serve on {host}:{port}: {reason}", file=sys.stderr)
        return EXIT_SERVE
    return 0


async def _serve(
    config: ExtenderConfig,
    credentials: Credentials | None,
    listen: Any,
    guard: ServingGuard,
    metrics_serving: ServingOptions,
) -> None:
    host, port = listen
    client = ApiClient(credentials, qps=500, burst=1000) if credentials is not None else None
    servers: list[HealthServer] = []
    try:
        extender = Extender(config, client, host, port, guard)
        await extender.start()
        if client is not None and metrics_serving.secure_port:
            servers = health_servers(extender.web.metrics, metrics_serving, client)
            for server in servers:
                server.add_readiness_check(
                    "informers-synced",
                    lambda: all(i.synced.is_set() for i in extender.informers),
                )
                try:
                    await server.start()
                except OSError as error:
                    # Named by its own address, not the protocol's.
                    raise MetricsPortError(server.host, server.port, error) from error
                log.info("serving metrics on %s", server.url)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, _on_signal, extender, signum)
        collect_young_less_often()
        frozen = asyncio.create_task(_freeze_when_synced(extender))
        try:
            await extender.run()
        finally:
            frozen.cancel()
        log.info("extender stopped")
    finally:
        for server in servers:
            await server.stop()
        if client is not None:
            await client.close()


async def _freeze_when_synced(extender: Extender) -> None:
    """The objects alive once the watches synced stay out of the collector's passes
    (``freeze_startup_heap``): a full collection over them held up requests for tens of
    milliseconds."""
    await extender.synced()
    log.info("watches synced; %d objects frozen", freeze_startup_heap())


def _on_signal(extender: Extender, signum: int) -> None:
    log.info("received %s: stopping", signal.Signals(signum).name)
    extender.stop()
