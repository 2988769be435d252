"""NodeVolumeLimits: the number of CSI volumes a node may attach.

Registered for its name, extension points and events (see ``volume_restrictions``).
"""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    PRE_FILTER,
    ActionType,
    ClusterEvent,
    EventResource,
    PluginSpec,
)

NAME = names.NODE_VOLUME_LIMITS
EVENTS = (
    ClusterEvent(EventResource.CSI_NODE, ActionType.ADD | ActionType.UPDATE_OTHER),
    ClusterEvent(EventResource.POD, ActionType.DELETE),
    ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
    ClusterEvent(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE),
)
SPEC = PluginSpec(NAME, frozenset({PRE_FILTER, FILTER}), events=EVENTS)
