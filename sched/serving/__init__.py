"""Secure serving of /metrics and the health paths, as kube-scheduler serves them.

``options`` holds the command-line flags (``--secure-port``, ``--tls-cert-file``,
``--insecure-port``, ...) and checks them; ``certs`` makes the self-signed serving
certificate used when no certificate is given; ``delegated`` authenticates callers with
TokenReview and authorizes them with SubjectAccessReview against the API server, and lets
the always-allowed paths (the health checks) through for anyone.
"""

from kubesalvo.sched.serving.delegated import DelegatedAuth, auth_middleware
from kubesalvo.sched.serving.options import ServingOptions, add_flags, options_from_args

__all__ = ["DelegatedAuth", "ServingOptions", "add_flags", "auth_middleware", "options_from_args"]
