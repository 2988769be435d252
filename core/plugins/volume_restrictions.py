"""VolumeRestrictions: volumes that cannot be shared (ReadWriteOncePod, some disk kinds).

What kubesalvo implements of kube-scheduler v1.34's plugin: its PreFilter reads every
claim of the pod, so a claim that does not exist rejects the pod on every node
(``persistentvolumeclaim "x" not found``, UnschedulableAndUnresolvable) - it runs before
VolumeBinding's and gives the text first.

A ReadWriteOncePod claim that a pod counted on some node uses (bound, assumed, or placed
earlier in the same burst: such pods cut the burst, core/volume_burst.py) fails the pod
on every node (``node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod
access mode already in-use by another pod``, Unschedulable).

Not yet implemented, and never silently: a pod with an in-tree disk that can conflict on
a node (gcePersistentDisk, awsElasticBlockStore, rbd, iscsi) fails its attempt with an
error saying so, and stays pending.

A class filter (``core/plugins/framework.py``), asked once per class with volumes.
"""

from __future__ import annotations

from kubesalvo.core import volumes
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    PRE_FILTER,
    ActionType,
    ClassFilterResult,
    ClusterEvent,
    Code,
    EventResource,
    NodeTable,
    PluginSpec,
    PodClass,
)

__all__ = [
    "ERR_REASON_DISK_CONFLICT",
    "ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT",
    "NAME",
    "filter_class",
]

NAME = names.VOLUME_RESTRICTIONS
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
READ_WRITE_ONCE_POD = volumes.READ_WRITE_ONCE_POD
# In-tree sources whose disks conflict between pods of one node.
DISK_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
NOT_YET_DISKS = (
    'kubesalvo does not check in-tree disk conflicts yet (VolumeRestrictions): volume "{}"'
)


def filter_class(
    args: object, nodes: NodeTable, pod: PodClass, storage: volumes.StorageObjects
) -> ClassFilterResult | None:
    """PreFilter for one class (None: nothing to restrict, Skip)."""
    disk = next(
        (v for v in pod.spec.get("volumes") or () if any(s in v for s in DISK_SOURCES)), None
    )
    in_use = False
    for _, name in volumes.claim_volumes(pod.spec):
        claim = storage.claim(pod.namespace, name)
        if claim is None:
            return ClassFilterResult(volumes.not_found("persistentvolumeclaim", name))
        modes = (claim.get("spec") or {}).get("accessModes") or ()
        if READ_WRITE_ONCE_POD in modes and storage.claim_users.get(f"{pod.namespace}/{name}"):
            in_use = True
    if disk is not None:
        return ClassFilterResult(error=NOT_YET_DISKS.format(disk.get("name")))
    if in_use:
        # A pod on some node uses the claim: every node fails (Unschedulable: preempting
        # that pod may help).
        every = volumes.every_row(nodes)
        return ClassFilterResult(failing=((ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT, every),))
    return None


EVENTS = (
    ClusterEvent(EventResource.POD, ActionType.DELETE),
    ClusterEvent(EventResource.NODE, ActionType.ADD),
    ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
)
SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, FILTER}),
    reasons={
        ERR_REASON_DISK_CONFLICT: Code.UNSCHEDULABLE,
        ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT: Code.UNSCHEDULABLE,
    },
    events=EVENTS,
    class_filter=filter_class,
    class_filter_reads="volumes",
)
