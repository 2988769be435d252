"""The storage objects the volume filters read, and what those filters share.

``StorageObjects`` is a plain holder of the cluster's PersistentVolumeClaims,
PersistentVolumes, StorageClasses, CSINodes, CSIDrivers and CSIStorageCapacities as
API-JSON dicts (``ClusterState.storage``). The runtime's storage informers fill it through
the scheduler cache, which holds every change back while a burst runs, so a burst reads
one consistent set without core doing any I/O; ``simulate`` and the tests fill it
directly. The helpers below are component-helpers' storage rules (a claim's class, when
it is fully bound, when its class delays binding) and the API server's not-found texts,
which the volume plugins' PreFilter messages repeat.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_CLASS",
    "KINDS",
    "BindingModeUnset",
    "StorageObjects",
    "claim_class",
    "claim_volumes",
    "delays_binding",
    "every_row",
    "is_fully_bound",
    "not_found",
]

Object = Mapping[str, Any]

# The PV controller marks a claim whose binding it finished with this annotation.
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
# The scheduler asks a provisioner for a volume on a node with this claim annotation.
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
# The beta annotation that still wins over spec.storageClassName.
ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

# The kinds the holder keeps, as the informers name them.
CLAIMS = "persistentvolumeclaims"
VOLUMES = "persistentvolumes"
CLASSES = "storageclasses"
CSI_NODES = "csinodes"
CSI_DRIVERS = "csidrivers"
CAPACITIES = "csistoragecapacities"
KINDS = (CLAIMS, VOLUMES, CLASSES, CSI_NODES, CSI_DRIVERS, CAPACITIES)
# Kinds whose objects live in a namespace (keyed "namespace/name"); the rest by name.
NAMESPACED = frozenset({CLAIMS, CAPACITIES})


@dataclass
class StorageObjects:
    """The storage objects of the cluster, by kind, then by key ("ns/name" or name)."""

    objects: dict[str, dict[str, Object]] = field(
        default_factory=lambda: {kind: {} for kind in KINDS}
    )
    # Bumped on every change: anything derived from the objects keys on it.
    version: int = 0

    @staticmethod
    def key(kind: str, obj: Object) -> str:
        meta = obj.get("metadata") or {}
        name = meta.get("name") or ""
        if kind in NAMESPACED:
            return f"{meta.get('namespace') or 'default'}/{name}"
        return str(name)

    def put(self, kind: str, obj: Object) -> None:
        self.objects[kind][self.key(kind, obj)] = obj
        self.version += 1

    def delete(self, kind: str, obj: Object) -> None:
        if self.objects[kind].pop(self.key(kind, obj), None) is not None:
            self.version += 1

    def copy(self) -> StorageObjects:
        """A copy that later changes to this one do not reach (the objects are shared:
        nothing changes an object, a change replaces it)."""
        return StorageObjects(
            {kind: dict(by_key) for kind, by_key in self.objects.items()}, self.version
        )

    def claim(self, namespace: str, name: str) -> Object | None:
        return self.objects[CLAIMS].get(f"{namespace}/{name}")

    def volume(self, name: str) -> Object | None:
        return self.objects[VOLUMES].get(name)

    def storage_class(self, name: str) -> Object | None:
        return self.objects[CLASSES].get(name)

    def csi_node(self, name: str) -> Object | None:
        return self.objects[CSI_NODES].get(name)

    def csi_nodes(self) -> Iterator[Object]:
        return iter(self.objects[CSI_NODES].values())

    def __len__(self) -> int:
        return sum(len(by_key) for by_key in self.objects.values())


def every_row(nodes: Any) -> npt.NDArray[np.bool_]:
    """A mask of every row of a NodeTable (no label has the empty key)."""
    return ~nodes.has_label("")


def not_found(resource: str, name: str) -> str:
    """The API's NotFound text a lister returns: ``persistentvolumeclaim "x" not found``
    (``resource`` is the lister's qualified resource, e.g. storageclass.storage.k8s.io)."""
    return f'{resource} "{name}" not found'


def claim_volumes(spec: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], str]]:
    """The pod's persistentVolumeClaim volumes with their claim names, in spec order."""
    found = []
    for volume in spec.get("volumes") or ():
        source = volume.get("persistentVolumeClaim")
        if source is not None:
            found.append((volume, source.get("claimName") or ""))
    return found


def claim_class(claim: Object) -> str:
    """The claim's StorageClass name: the beta annotation, else spec.storageClassName."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    if ANN_STORAGE_CLASS in annotations:
        return str(annotations[ANN_STORAGE_CLASS])
    return str((claim.get("spec") or {}).get("storageClassName") or "")


def is_fully_bound(claim: Object) -> bool:
    """Bound to a volume, and the PV controller finished the binding."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    return bool((claim.get("spec") or {}).get("volumeName")) and (ANN_BIND_COMPLETED in annotations)


class BindingModeUnset(ValueError):
    """A StorageClass without volumeBindingMode (the API server defaults it: only seen in
    objects that were not served by one)."""


def delays_binding(claim: Object, storage: StorageObjects) -> bool:
    """Whether the claim's class binds at the first consumer (no class, or a class that
    does not exist: immediate). Raises BindingModeUnset as upstream's error."""
    name = claim_class(claim)
    if not name:
        return False
    storage_class = storage.storage_class(name)
    if storage_class is None:
        return False
    mode = storage_class.get("volumeBindingMode")
    if mode is None:
        raise BindingModeUnset(f'VolumeBindingMode not set for StorageClass "{name}"')
    return bool(mode == WAIT_FOR_FIRST_CONSUMER)
