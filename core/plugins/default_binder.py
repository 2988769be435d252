"""DefaultBinder: binds a placed pod with a ``pods/{name}/binding`` POST (``sched/binder.py``)."""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import BIND, PluginSpec

NAME = names.DEFAULT_BINDER
SPEC = PluginSpec(NAME, frozenset({BIND}))
