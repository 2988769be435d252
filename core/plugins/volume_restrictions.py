"""VolumeRestrictions: volumes that cannot be shared (ReadWriteOncePod, some disk kinds).

What kubesalvo implements of kube-scheduler v1.34's plugin: its PreFilter reads every
claim of the pod, so a claim that does not exist rejects the pod on every node
(``persistentvolumeclaim "x" not found``, UnschedulableAndUnresolvable) - it runs before
VolumeBinding's and gives the text first.

A ReadWriteOncePod claim that a pod counted on some node uses (bound, assumed, or placed
earlier in the same burst: such pods cut the burst, core/volume_burst.py) fails the pod
on every node (``node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod
access mode already in-use by another pod``, Unschedulable).

A pod with an in-tree disk (gcePersistentDisk, awsElasticBlockStore, rbd, iscsi) fails
the nodes where a pod counted there mounts the same disk, unless both mount it read-only
(``core/in_tree_disks.py``; ``node(s) had no available disk``, Unschedulable, checked
before the ReadWriteOncePod claims as upstream's Filter does). Pods of a burst with such
disks cut the burst (core/volume_burst.py), so a later pod sees them on their nodes.

A class filter (``core/plugins/framework.py``), asked once per class with volumes.
"""

from __future__ import annotations

import numpy as np

from kubesalvo.core import in_tree_disks, volumes
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
    PerNode,
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


def filter_class(
    args: object, nodes: NodeTable, pod: PodClass, storage: volumes.StorageObjects
) -> ClassFilterResult | None:
    """PreFilter and Filter for one class (None: nothing to restrict, Skip)."""
    in_use = False
    for _, name in volumes.claim_volumes(pod.spec):
        claim = storage.claim(pod.namespace, name)
        if claim is None:
            return ClassFilterResult(volumes.not_found("persistentvolumeclaim", name))
        modes = (claim.get("spec") or {}).get("accessModes") or ()
        if READ_WRITE_ONCE_POD in modes and storage.claim_users.get(f"{pod.namespace}/{name}"):
            in_use = True
    failing: list[tuple[str, np.ndarray]] = []
    disks = in_tree_disks.disks(pod.spec) if storage.node_disks else []
    if disks:
        conflicting = _conflicting_rows(nodes, disks, storage.node_disks)
        if conflicting.any():
            failing.append((ERR_REASON_DISK_CONFLICT, conflicting))
    if in_use:
        # A pod on some node uses the claim: every node fails (Unschedulable: preempting
        # that pod may help).
        failing.append((ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT, volumes.every_row(nodes)))
    return ClassFilterResult(failing=tuple(failing)) if failing else None


def _conflicting_rows(
    nodes: NodeTable,
    disks: list[volumes.Object],
    node_disks: dict[str, dict[str, list[volumes.Object]]],
) -> np.ndarray:
    """Rows whose node counts a pod mounting one of ``disks`` in a conflicting way."""
    names = nodes.node_names()
    rows = np.zeros(len(names), dtype=np.bool_)
    for row, name in enumerate(names):
        on_node = node_disks.get(name) if name is not None else None
        if on_node and any(
            in_tree_disks.conflict(disk, others) for disk in disks for others in on_node.values()
        ):
            rows[row] = True
    return rows


EVENTS = (
    ClusterEvent(EventResource.POD, ActionType.DELETE),
    ClusterEvent(EventResource.NODE, ActionType.ADD),
    ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
)


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.volumes import VOLUME_RESTRICTIONS

    return VOLUME_RESTRICTIONS


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
    per_node=_per_node,
)
