"""VolumeBinding: binds a pod's unbound PersistentVolumeClaims. Its Score needs the
StorageCapacityScoring feature (off in v1.34), so it always adds 0; kubesalvo keeps its
args, extension points and events."""

from __future__ import annotations

from dataclasses import dataclass

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    PRE_BIND,
    PRE_FILTER,
    PRE_SCORE,
    RESERVE,
    SCORE,
    ActionType,
    ClusterEvent,
    EventResource,
    FieldError,
    PluginSpec,
    check,
    non_negative,
)

__all__ = ["NAME", "VolumeBindingArgs"]

NAME = names.VOLUME_BINDING


@dataclass(frozen=True)
class VolumeBindingArgs:
    """VolumeBindingArgs: how long PreBind waits for the volumes, in seconds."""

    bind_timeout_seconds: int = 600

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        return non_negative(
            "bindTimeoutSeconds",
            self.bind_timeout_seconds,
            "invalid BindTimeoutSeconds, should not be a negative value",
        )


_UPDATE = ActionType.ADD | ActionType.UPDATE_OTHER
EVENTS = (
    ClusterEvent(EventResource.STORAGE_CLASS, _UPDATE),
    ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, _UPDATE),
    ClusterEvent(EventResource.PERSISTENT_VOLUME, _UPDATE),
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ClusterEvent(EventResource.CSI_NODE, _UPDATE),
    ClusterEvent(EventResource.CSI_DRIVER, ActionType.UPDATE_OTHER),
    ClusterEvent(EventResource.CSI_STORAGE_CAPACITY, _UPDATE),
)
SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, FILTER, RESERVE, PRE_BIND, PRE_SCORE, SCORE}),
    args=VolumeBindingArgs,
    events=EVENTS,
)
