"""Who may call the extender: TLS, and a client certificate for the verbs that write.

``/bind`` binds any pod to any node and ``/preempt`` chooses victims: they need a caller
the extender can tell apart. kube-scheduler's extender configuration can send exactly one
credential, a client certificate (``enableHTTPS: true`` with ``tlsConfig.certFile`` and
``keyFile``, verified here against ``--client-ca-file``; it has no field for a bearer
token). So:

* with ``--tls-cert-file``/``--tls-private-key-file`` the extender serves HTTPS (the pair
  reloaded when its files change, see ``serving.reload``); kube-scheduler then needs
  ``enableHTTPS: true`` and ``tlsConfig.caFile`` (or ``insecure: true``);
* with ``--client-ca-file`` too, ``/bind`` and ``/preempt`` (also per agent) answer 403
  unless the connection presented a certificate that CA signed; ``/filter`` and
  ``/prioritize``, which change nothing, and the health and metrics paths stay open;
* without a client CA, the writing verbs are served only on a loopback address (the
  overlay's pod-local sidecar): listening anywhere else is refused at start.
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass

from aiohttp import web

from kubesalvo.sched.serving.reload import CertificateFiles

__all__ = ["WRITING_VERBS", "GuardError", "ServingGuard"]

WRITING_VERBS = frozenset({"bind", "preempt"})


class GuardError(ValueError):
    """Flags that would leave /bind and /preempt open, or that do not fit together."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServingGuard:
    """The extender's TLS and client-certificate settings, checked once at start."""

    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    client_ca_file: str | None = None

    def check(self, host: str) -> None:
        """Refuse settings that leave the writing verbs open beyond loopback."""
        if bool(self.tls_cert_file) != bool(self.tls_private_key_file):
            raise GuardError("--tls-cert-file and --tls-private-key-file go together")
        if self.client_ca_file and not self.tls_cert_file:
            raise GuardError(
                "--client-ca-file needs HTTPS: give --tls-cert-file and --tls-private-key-file"
            )
        if not self.client_ca_file and not is_loopback(host):
            raise GuardError(
                f"--listen {host} is not a loopback address: /bind and /preempt would be open "
                "to anyone who reaches it; give --client-ca-file (with --tls-cert-file and "
                "--tls-private-key-file) so that only kube-scheduler's client certificate "
                "(tlsConfig.certFile) may call them"
            )

    @property
    def https(self) -> bool:
        return bool(self.tls_cert_file)

    def tls(self) -> tuple[ssl.SSLContext, CertificateFiles] | None:
        """The serving context and its reloadable pair, or None for plain HTTP."""
        if not self.tls_cert_file or not self.tls_private_key_file:
            return None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        files = CertificateFiles(context, self.tls_cert_file, self.tls_private_key_file)
        if self.client_ca_file:
            context.load_verify_locations(cafile=self.client_ca_file)
            # Optional at the handshake (probes and Prometheus have no certificate), but a
            # presented one must verify; the writing verbs then require one (allows()).
            context.verify_mode = ssl.CERT_OPTIONAL
        return context, files

    def allows(self, request: web.Request, verb: str) -> bool:
        """Whether ``request`` may call ``verb``."""
        if verb not in WRITING_VERBS or not self.client_ca_file:
            return True
        transport = request.transport
        peer = transport.get_extra_info("peercert") if transport is not None else None
        return bool(peer)
