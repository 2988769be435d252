"""GroupPriority (kubesalvo): a queue sort by the pod group's priority (registered, not built)."""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import QUEUE_SORT, PluginSpec

NAME = names.GROUP_PRIORITY
SPEC = PluginSpec(NAME, frozenset({QUEUE_SORT}))
