"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score.

Both are static per class (``core/encode.py``: reason code 3, and the count of
untolerated PreferNoSchedule taints the kernel normalises over the feasible nodes).
"""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    PRE_SCORE,
    SCORE,
    ActionType,
    ClusterEvent,
    Code,
    EventResource,
    PluginSpec,
)

NAME = names.TAINT_TOLERATION
# v1.34.4 no longer names the taint (a security fix, kubernetes#134740, backported to the
# 1.34 patch releases; earlier ones wrote "node(s) had untolerated taint {key: value}"):
# the taint is only logged.
ERR_REASON_UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"
EVENTS = (
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
    ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
)
SPEC = PluginSpec(
    NAME,
    frozenset({FILTER, PRE_SCORE, SCORE}),
    reasons={ERR_REASON_UNTOLERATED_TAINT: Code.UNSCHEDULABLE_AND_UNRESOLVABLE},
    events=EVENTS,
)
