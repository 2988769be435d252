"""In-tree disks that two pods of one node cannot both mount (VolumeRestrictions).

kube-scheduler's VolumeRestrictions fails a node when a volume of the pod and a volume of
a pod already on the node name the same GCE persistent disk, AWS EBS volume, iSCSI
target (IQN) or Ceph RBD image (an overlapping monitor, same pool and image), unless
both mount it read-only; an EBS volume conflicts even read-only. These volumes need no
driver to be scheduled: only their identities are compared, here, on API-JSON volumes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SOURCES", "conflict", "disks"]

# The in-tree sources VolumeRestrictions compares.
SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")
# The API server's default RBD pool, for volumes given here without defaulting.
DEFAULT_RBD_POOL = "rbd"

Volume = Mapping[str, Any]


def disks(spec: Mapping[str, Any]) -> list[Volume]:
    """The pod's volumes of a source VolumeRestrictions compares, in spec order."""
    return [v for v in spec.get("volumes") or () if any(s in v for s in SOURCES)]


def conflict(volume: Volume, others: Sequence[Volume]) -> bool:
    """Whether ``volume`` cannot be mounted beside any of ``others`` on one node."""
    return any(_same_disk(volume, other) for other in others)


def _both_read_only(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return bool(a.get("readOnly")) and bool(b.get("readOnly"))


def _same_disk(volume: Volume, other: Volume) -> bool:
    for kind in SOURCES:
        mine, theirs = volume.get(kind), other.get(kind)
        if mine is not None and theirs is not None and _IDENTICAL[kind](mine, theirs):
            # An EBS volume attaches to one instance only: read-only mounts conflict too.
            return kind == "awsElasticBlockStore" or not _both_read_only(mine, theirs)
    return False


def _same_rbd_image(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """One RBD image: a Ceph monitor in common, the same pool and image name."""
    return (
        bool(set(a.get("monitors") or ()).intersection(b.get("monitors") or ()))
        and (a.get("pool") or DEFAULT_RBD_POOL) == (b.get("pool") or DEFAULT_RBD_POOL)
        and a.get("image") == b.get("image")
    )


# Per source: whether two of its volumes name one disk.
_IDENTICAL = {
    "gcePersistentDisk": lambda a, b: a.get("pdName") == b.get("pdName"),
    "awsElasticBlockStore": lambda a, b: a.get("volumeID") == b.get("volumeID"),
    "iscsi": lambda a, b: a.get("iqn") == b.get("iqn"),
    "rbd": _same_rbd_image,
}
