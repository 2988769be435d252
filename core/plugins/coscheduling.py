"""Coscheduling (kubesalvo): a pod group (gang) is placed all together or not at all.

The kernel rolls a gang back when it misses its minimum (``core/gang.py`` reads the
groups); here the texts and the events that can complete a gang.
"""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    PERMIT,
    PRE_FILTER,
    QUEUE_SORT,
    ActionType,
    ClusterEvent,
    Code,
    EventResource,
    PluginSpec,
)

__all__ = ["ERR_REASON_GANG_MIN_AVAILABLE", "NAME", "gang_reason"]

NAME = names.COSCHEDULING
# The gang could not reach its minimum, so none of it was placed.
ERR_REASON_GANG_MIN_AVAILABLE = "pod group could not reach its minAvailable"


def gang_reason(group: str, placed: int, minimum: int) -> str:
    """Why a gang's pods were taken back: used as the PreFilter-style part of the message."""
    return f"{ERR_REASON_GANG_MIN_AVAILABLE} ({group}: {placed} of {minimum} placed)"


# A gang short of its minimum may complete when members arrive or when room appears for
# the members that did not fit.
EVENTS = (
    ClusterEvent(
        EventResource.POD, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_POD_LABEL
    ),
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
)
SPEC = PluginSpec(
    NAME,
    frozenset({QUEUE_SORT, PRE_FILTER, PERMIT}),
    reasons={ERR_REASON_GANG_MIN_AVAILABLE: Code.UNSCHEDULABLE},
    events=EVENTS,
)
