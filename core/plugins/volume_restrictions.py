"""VolumeRestrictions: volumes that cannot be shared (ReadWriteOncePod, some disk kinds).

What kubesalvo implements of kube-scheduler v1.34's plugin: its PreFilter reads every
claim of the pod, so a claim that does not exist rejects the pod on every node
(``persistentvolumeclaim "x" not found``, UnschedulableAndUnresolvable) - it runs before
VolumeBinding's and gives the text first.

A ReadWriteOncePod claim that a pod counted on some node uses (bound, assumed, or placed
earlier in the same burst: such pods cut the burst, core/volume_burst.py) fails the pod
on every node (``node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod
access mode already in-use by another pod``, Unschedulable).

In-tree disks (gcePersistentDisk, awsElasticBlockStore, rbd, iscsi): a node where a pod
counted there (or placed earlier in the burst: such pods cut it) has the same disk fails
(``node(s) had no available disk``, Unschedulable), upstream's rules deciding what is the
same disk: a GCE PD by name and an iSCSI disk by IQN unless both mounts are read-only, an
EBS volume by ID always, an RBD image by pool and image with a monitor in common unless
both are read-only. A row failing both counts under the disk conflict, as upstream's Filter
checks it first.

A class filter (``core/plugins/framework.py``), asked once per class with volumes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

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
    "disks_conflict",
    "filter_class",
]

NAME = names.VOLUME_RESTRICTIONS
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
READ_WRITE_ONCE_POD = volumes.READ_WRITE_ONCE_POD
DISK_SOURCES = volumes.DISK_SOURCES
RBD_DEFAULT_POOL = "rbd"  # the API server's default for rbd.pool


def _shared_read_only(one: volumes.Object, other: volumes.Object) -> bool:
    return bool(one.get("readOnly")) and bool(other.get("readOnly"))


def disks_conflict(volume: volumes.Object, existing: volumes.Object) -> bool:
    """Whether two in-tree volumes are the same disk in a way one node cannot mount."""
    for source in DISK_SOURCES:
        one, other = volume.get(source), existing.get(source)
        if one is None or other is None:
            continue
        if source == "gcePersistentDisk":
            if one.get("pdName") == other.get("pdName") and not _shared_read_only(one, other):
                return True
        elif source == "awsElasticBlockStore":
            if one.get("volumeID") == other.get("volumeID"):
                return True
        elif source == "iscsi":
            if one.get("iqn") == other.get("iqn") and not _shared_read_only(one, other):
                return True
        elif (
            set(one.get("monitors") or ()) & set(other.get("monitors") or ())
            and (one.get("pool") or RBD_DEFAULT_POOL) == (other.get("pool") or RBD_DEFAULT_POOL)
            and one.get("image") == other.get("image")
            and not _shared_read_only(one, other)
        ):
            return True
    return False


def _disk_conflicts(
    nodes: NodeTable, disks: list[volumes.Object], storage: volumes.StorageObjects
) -> npt.NDArray[np.bool_]:
    """The rows whose counted pods hold a disk that conflicts with one of ``disks``."""
    taken: set[str] = set()
    for pod_key, existing in storage.pod_disks.items():
        node = storage.pod_nodes.get(pod_key, "")
        if node not in taken and any(disks_conflict(v, e) for v in disks for e in existing):
            taken.add(node)
    return np.array([name in taken for name in nodes.node_names()], dtype=bool)


def filter_class(
    args: object, nodes: NodeTable, pod: PodClass, storage: volumes.StorageObjects
) -> ClassFilterResult | None:
    """PreFilter for one class (None: nothing to restrict, Skip)."""
    disks = volumes.in_tree_disks(pod.spec)
    in_use = False
    for _, name in volumes.claim_volumes(pod.spec):
        claim = storage.claim(pod.namespace, name)
        if claim is None:
            return ClassFilterResult(volumes.not_found("persistentvolumeclaim", name))
        modes = (claim.get("spec") or {}).get("accessModes") or ()
        if READ_WRITE_ONCE_POD in modes and storage.claim_users.get(f"{pod.namespace}/{name}"):
            in_use = True
    failing = []
    if disks:
        failing.append((ERR_REASON_DISK_CONFLICT, _disk_conflicts(nodes, disks, storage)))
    if in_use:
        # A pod on some node uses the claim: every node fails (Unschedulable: preempting
        # that pod may help).
        failing.append((ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT, volumes.every_row(nodes)))
    return ClassFilterResult(failing=tuple(failing)) if failing else None


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
