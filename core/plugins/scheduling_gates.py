"""SchedulingGates: a pod with ``spec.schedulingGates`` waits outside the active queue.

The queue's PreEnqueue check (``sched/queue/queue.py``) applies it; the pod comes back
when an update removes its last gate.
"""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    PRE_ENQUEUE,
    ActionType,
    ClusterEvent,
    EventResource,
    PluginSpec,
)

NAME = names.SCHEDULING_GATES
EVENTS = (ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),)
SPEC = PluginSpec(NAME, frozenset({PRE_ENQUEUE}), events=EVENTS)
