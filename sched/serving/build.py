"""The health and metrics servers a scheduler runs, from its ``ServingOptions``.

The secure one (HTTPS, delegated authentication and authorization through ``client``'s API
server) and, only when asked for, the plain one; both serve the same metrics and the same
readiness checks, which the caller adds to each.
"""

from __future__ import annotations

from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.server import HealthServer, Rendered
from kubesalvo.sched.serving.certs import serving_tls
from kubesalvo.sched.serving.delegated import DelegatedAuth, auth_middleware
from kubesalvo.sched.serving.options import ServingOptions


def health_servers(
    metrics: Rendered, options: ServingOptions, client: ApiClient
) -> list[HealthServer]:
    servers = []
    if options.secure_port:
        tls, files = serving_tls(
            options.tls_cert_file, options.tls_private_key_file, options.bind_address
        )
        auth = DelegatedAuth(client, options.always_allow_paths)
        servers.append(
            HealthServer(
                metrics,
                options.bind_address,
                options.secure_port,
                tls=tls,
                middlewares=[auth_middleware(auth)],
                # A rotated certificate is served without a restart.
                background=[files.watch] if files is not None else [],
            )
        )
    if options.insecure_port:
        servers.append(HealthServer(metrics, options.insecure_bind_address, options.insecure_port))
    return servers
