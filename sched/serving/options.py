"""The serving flags of ``kubesalvo run``, checked, and the servers they describe.

kube-scheduler's names and defaults: ``--bind-address`` 0.0.0.0 and ``--secure-port``
10259 (HTTPS; 0 turns it off), ``--tls-cert-file``/``--tls-private-key-file`` (a
self-signed certificate when neither is given), ``--authorization-always-allow-paths``
(/healthz, /livez, /readyz). The plain HTTP port exists only when asked for:
``--insecure-port`` (0, the default, is off) on ``--insecure-bind-address`` (loopback by
default), for local development. The older ``--metrics-port``/``--metrics-address``
still work as spellings of the plain port; a command line that uses them and does not
name ``--secure-port`` keeps its old meaning (plain HTTP only), so scripts written for it
neither change behaviour nor collide on port 10259.
"""

from __future__ import annotations

import argparse
import ipaddress
from dataclasses import dataclass

from kubesalvo.sched.serving.delegated import ALWAYS_ALLOW_PATHS

SECURE_PORT = 10259
BIND_ADDRESS = "0.0.0.0"
INSECURE_BIND_ADDRESS = "127.0.0.1"


class OptionsError(ValueError):
    """A flag value that cannot work; the message names the flag and what it accepts."""


@dataclass(frozen=True)
class ServingOptions:
    bind_address: str = BIND_ADDRESS
    secure_port: int = SECURE_PORT
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    always_allow_paths: tuple[str, ...] = ALWAYS_ALLOW_PATHS
    insecure_bind_address: str = INSECURE_BIND_ADDRESS
    insecure_port: int = 0
    # The web view's pages (/ui/) on the secure port too, behind its authentication.
    web_view: bool = False

    def __post_init__(self) -> None:
        ports = (("--secure-port", self.secure_port), ("--insecure-port", self.insecure_port))
        for flag, port in ports:
            if not 0 <= port <= 65535:
                raise OptionsError(f"{flag}: {port} is not a port (0 to 65535; 0 turns it off)")
        for flag, address in (
            ("--bind-address", self.bind_address),
            ("--insecure-bind-address", self.insecure_bind_address),
        ):
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise OptionsError(
                    f"{flag}: {address!r} is not an IP address (e.g. 0.0.0.0, 127.0.0.1, ::)"
                ) from None
        if bool(self.tls_cert_file) != bool(self.tls_private_key_file):
            raise OptionsError(
                "--tls-cert-file and --tls-private-key-file go together: give both, or "
                "neither for a self-signed certificate"
            )
        if self.web_view and not self.secure_port:
            raise OptionsError(
                "--web-view-on-secure-port: the secure port is off (--secure-port 0); "
                "the web view stays on the debug port"
            )
        for path in self.always_allow_paths:
            if not path.startswith("/"):
                raise OptionsError(
                    f"--authorization-always-allow-paths: {path!r} must start with '/'"
                )


def add_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("serving (/healthz, /livez, /readyz, /metrics)")
    group.add_argument(
        "--bind-address",
        default=BIND_ADDRESS,
        help="address of the HTTPS port (default %(default)s)",
    )
    group.add_argument(
        "--secure-port",
        type=int,
        default=None,
        help=f"HTTPS port with delegated authentication and authorization (default {SECURE_PORT}; "
        "0 turns HTTPS off)",
    )
    group.add_argument("--tls-cert-file", help="serving certificate (PEM; default: self-signed)")
    group.add_argument("--tls-private-key-file", help="key of --tls-cert-file (PEM)")
    group.add_argument(
        "--authorization-always-allow-paths",
        default=",".join(ALWAYS_ALLOW_PATHS),
        help="comma-separated paths served to anyone (default %(default)s)",
    )
    group.add_argument(
        "--insecure-port",
        type=int,
        default=None,
        help="plain HTTP port without authentication, for local development (default 0: off)",
    )
    group.add_argument(
        "--insecure-bind-address",
        default=None,
        help=f"address of --insecure-port (default {INSECURE_BIND_ADDRESS})",
    )
    group.add_argument(
        "--web-view-on-secure-port",
        action="store_true",
        help="serve the web view (/ui/) on the secure port too, for users allowed to get /ui/*",
    )
    group.add_argument("--metrics-port", type=int, default=None, help=argparse.SUPPRESS)
    group.add_argument("--metrics-address", default=None, help=argparse.SUPPRESS)


def options_from_args(args: argparse.Namespace) -> ServingOptions:
    """The options the flags ask for; raises ``OptionsError`` for values that cannot work."""
    legacy = args.metrics_port is not None or args.metrics_address is not None
    insecure_port = args.insecure_port if args.insecure_port is not None else args.metrics_port
    insecure_address = args.insecure_bind_address or args.metrics_address
    secure_port = args.secure_port
    if secure_port is None:
        secure_port = 0 if legacy else SECURE_PORT
    paths = tuple(p.strip() for p in args.authorization_always_allow_paths.split(",") if p.strip())
    return ServingOptions(
        bind_address=args.bind_address,
        secure_port=secure_port,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        always_allow_paths=paths,
        insecure_bind_address=insecure_address or INSECURE_BIND_ADDRESS,
        insecure_port=insecure_port or 0,
        web_view=args.web_view_on_secure_port,
    )
