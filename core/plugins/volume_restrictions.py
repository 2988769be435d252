"""VolumeRestrictions: volumes that cannot be shared (ReadWriteOncePod, some disk kinds).

kubesalvo filters only pods without volume conflicts; the plugin is registered for its
name, extension points and events.
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

NAME = names.VOLUME_RESTRICTIONS
EVENTS = (
    ClusterEvent(EventResource.POD, ActionType.DELETE),
    ClusterEvent(EventResource.NODE, ActionType.ADD),
    ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
)
SPEC = PluginSpec(NAME, frozenset({PRE_FILTER, FILTER}), events=EVENTS)
