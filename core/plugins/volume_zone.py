"""VolumeZone: a pod's persistent volumes must be reachable from the node's zone.

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

NAME = names.VOLUME_ZONE
EVENTS = (
    ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD),
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE_OTHER),
    ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE_OTHER),
)
SPEC = PluginSpec(NAME, frozenset({PRE_FILTER, FILTER}), events=EVENTS)
