"""PrioritySort: the queue pops the higher ``spec.priority`` first, then the earlier pod.

Its sort key lives with the queue (``sched/queue/sorting.py``), which owns the
timestamps it compares.
"""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import QUEUE_SORT, PluginSpec

NAME = names.PRIORITY_SORT
SPEC = PluginSpec(NAME, frozenset({QUEUE_SORT}))
