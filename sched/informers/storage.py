"""Storage informers: the objects the volume filters read, with only the fields they read.

PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers and
CSIStorageCapacities, each decoded into a small Struct and handed to the scheduler cache
as an API dict (``SchedulerCache.put_storage``), once per object version. The cache holds
the changes back while a burst runs, so the encoder reads one consistent set
(``ClusterState.storage``, core/volumes.py). They run when a profile enables one of the
volume plugins, as kube-scheduler starts these informers for them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import msgspec

from kubesalvo.core import volumes
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import ActionType, ClusterEvent, EventResource
from kubesalvo.sched.informers.models import (
    LabelSelector,
    NodeSelector,
    ObjectMeta,
    _Api,
    to_api_dict,
)
from kubesalvo.sched.informers.store import ADDED, DELETED, MODIFIED, Change
from kubesalvo.sched.informers.watch import Resource

__all__ = [
    "STORAGE_RESOURCES",
    "VOLUME_PLUGINS",
    "CSIDriver",
    "CSINode",
    "CSIStorageCapacity",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "StorageSink",
    "storage_handler",
]

# The plugins that read these objects.
VOLUME_PLUGINS = frozenset(
    {
        names.VOLUME_BINDING,
        names.VOLUME_ZONE,
        names.VOLUME_RESTRICTIONS,
        names.NODE_VOLUME_LIMITS,
    }
)


class VolumeResources(_Api):
    requests: dict[str, str] = msgspec.field(default_factory=dict)


class ClaimSpec(_Api):
    access_modes: list[str] = msgspec.field(default_factory=list)
    resources: VolumeResources | None = None
    # None and "" differ: no class asked for (the default class applies) vs. no class
    storage_class_name: str | None = None
    volume_name: str = ""
    selector: LabelSelector | None = None
    volume_mode: str | None = None


class ClaimStatus(_Api):
    phase: str = ""


class PersistentVolumeClaim(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ClaimSpec = msgspec.field(default_factory=ClaimSpec)
    status: ClaimStatus = msgspec.field(default_factory=ClaimStatus)


class VolumeNodeAffinity(_Api):
    required: NodeSelector | None = None


class ObjectReference(_Api):
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""


class CSISource(_Api):
    driver: str = ""
    volume_handle: str = ""


class VolumeSpec(_Api):
    capacity: dict[str, str] = msgspec.field(default_factory=dict)
    access_modes: list[str] = msgspec.field(default_factory=list)
    storage_class_name: str = ""
    node_affinity: VolumeNodeAffinity | None = None
    claim_ref: ObjectReference | None = None
    csi: CSISource | None = None
    volume_mode: str | None = None
    # the in-tree sources whose volumes NodeVolumeLimits and VolumeZone may count
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = None
    azure_disk: dict[str, Any] | None = None
    local: dict[str, Any] | None = None
    host_path: dict[str, Any] | None = None


class VolumeStatus(_Api):
    phase: str = ""


class PersistentVolume(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: VolumeSpec = msgspec.field(default_factory=VolumeSpec)
    status: VolumeStatus = msgspec.field(default_factory=VolumeStatus)


class TopologySelectorRequirement(_Api):
    key: str = ""
    values: list[str] = msgspec.field(default_factory=list)


class TopologySelectorTerm(_Api):
    match_label_expressions: list[TopologySelectorRequirement] = msgspec.field(default_factory=list)


class StorageClass(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    provisioner: str = ""
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] = msgspec.field(default_factory=list)


class VolumeNodeResources(_Api):
    count: int | None = None


class CSINodeDriver(_Api):
    name: str = ""
    node_id: str = msgspec.field(default="", name="nodeID")
    allocatable: VolumeNodeResources | None = None
    topology_keys: list[str] | None = None  # the API writes null for none


class CSINodeSpec(_Api):
    drivers: list[CSINodeDriver] = msgspec.field(default_factory=list)


class CSINode(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)


class CSIDriverSpec(_Api):
    attach_required: bool | None = None
    storage_capacity: bool | None = None


class CSIDriver(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSIDriverSpec = msgspec.field(default_factory=CSIDriverSpec)


class CSIStorageCapacity(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    node_topology: LabelSelector | None = None
    storage_class_name: str = ""
    capacity: str | None = None
    maximum_volume_size: str | None = None


PERSISTENTVOLUMECLAIMS = Resource(
    volumes.CLAIMS, "/api/v1/persistentvolumeclaims", PersistentVolumeClaim
)
PERSISTENTVOLUMES = Resource(volumes.VOLUMES, "/api/v1/persistentvolumes", PersistentVolume)
_STORAGE = "/apis/storage.k8s.io/v1"
STORAGECLASSES = Resource(volumes.CLASSES, f"{_STORAGE}/storageclasses", StorageClass)
CSINODES = Resource(volumes.CSI_NODES, f"{_STORAGE}/csinodes", CSINode)
CSIDRIVERS = Resource(volumes.CSI_DRIVERS, f"{_STORAGE}/csidrivers", CSIDriver)
CSISTORAGECAPACITIES = Resource(
    volumes.CAPACITIES, f"{_STORAGE}/csistoragecapacities", CSIStorageCapacity
)
STORAGE_RESOURCES: tuple[Resource[Any], ...] = (
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    STORAGECLASSES,
    CSINODES,
    CSIDRIVERS,
    CSISTORAGECAPACITIES,
)


class StorageSink(Protocol):
    """Where storage changes go: the scheduler cache."""

    def put_storage(self, kind: str, obj: Mapping[str, Any]) -> None: ...

    def delete_storage(self, kind: str, obj: Mapping[str, Any]) -> None: ...


# Each kind's cluster event resource, and the labels upstream gives its events.
_EVENT_RESOURCES = {
    volumes.CLAIMS: EventResource.PERSISTENT_VOLUME_CLAIM,
    volumes.VOLUMES: EventResource.PERSISTENT_VOLUME,
    volumes.CLASSES: EventResource.STORAGE_CLASS,
    volumes.CSI_NODES: EventResource.CSI_NODE,
    volumes.CSI_DRIVERS: EventResource.CSI_DRIVER,
    volumes.CAPACITIES: EventResource.CSI_STORAGE_CAPACITY,
}
_ACTIONS = {
    ADDED: (ActionType.ADD, "Add"),
    MODIFIED: (ActionType.UPDATE_OTHER, "Update"),
    DELETED: (ActionType.DELETE, "Delete"),
}
EventSink = Callable[[ClusterEvent, Any, Any], Any]


def storage_handler(
    sink: StorageSink, kind: str, on_event: EventSink | None = None
) -> Callable[[Change[Any]], None]:
    """The informer handler of one storage kind: each new version converted once, and,
    with ``on_event``, the cluster event handed on (the queue wakes the pods a volume
    plugin rejected: a claim created, a volume freed, a class added)."""
    resource = _EVENT_RESOURCES[kind]

    def handle(change: Change[Any]) -> None:
        if change.obj is None or change.type not in _ACTIONS:
            return
        obj = to_api_dict(change.obj)
        if change.type == DELETED:
            sink.delete_storage(kind, obj)
        else:
            sink.put_storage(kind, obj)
        if on_event is not None:
            action, word = _ACTIONS[change.type]
            old = to_api_dict(change.old) if change.old is not None else None
            event = ClusterEvent(resource, action, f"{resource.value}{word}")
            if change.type == DELETED:
                on_event(event, obj, None)
            else:
                on_event(event, old, obj)

    return handle
