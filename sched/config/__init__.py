"""kubesalvo's configuration: a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).

``load_config(path)`` returns a validated :class:`SchedulerConfig` (``None``: the default
configuration) or raises :class:`ConfigError` with every refused field's path and the
accepted values; the command line prints it and exits with code 2. See ``model`` for the
differences from kube-scheduler and the ``kubesalvo:`` extension block, and
deploy/config/ for example files.
"""

from kubesalvo.sched.config.errors import ConfigError, ErrorKind, FieldError
from kubesalvo.sched.config.loader import (
    DEFAULT_SCHEDULER_NAME,
    default_config,
    load_config,
    parse_config,
)
from kubesalvo.sched.config.model import (
    ClientConnection,
    KubesalvoOptions,
    LeaderElection,
    ProfileConfig,
    SchedulerConfig,
)

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "ClientConnection",
    "ConfigError",
    "ErrorKind",
    "FieldError",
    "KubesalvoOptions",
    "LeaderElection",
    "ProfileConfig",
    "SchedulerConfig",
    "default_config",
    "load_config",
    "parse_config",
]
