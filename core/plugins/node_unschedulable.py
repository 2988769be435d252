"""NodeUnschedulable: nodes with ``spec.unschedulable`` take only pods that tolerate it.

Encoded as a static mask per class (``core/encode.py``, reason code 1).
"""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    ActionType,
    ClusterEvent,
    Code,
    EventResource,
    PluginSpec,
)

NAME = names.NODE_UNSCHEDULABLE
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
# The taint a pod must tolerate to land on an unschedulable node.
UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
EVENTS = (
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
    ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
)
SPEC = PluginSpec(
    NAME,
    frozenset({FILTER}),
    reasons={ERR_REASON_UNSCHEDULABLE: Code.UNSCHEDULABLE_AND_UNRESOLVABLE},
    events=EVENTS,
)
