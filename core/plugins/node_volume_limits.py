"""NodeVolumeLimits: the number of CSI volumes a node may attach.

kube-scheduler v1.34's CSI limits: a node whose CSINode gives a driver an allocatable
count takes a pod only while the unique volumes of that driver - the pod's new ones and
those of the pods already on the node (a volume two pods share counts once) - stay
within the count (``node(s) exceed max volume count``, Unschedulable). Without a count
for the driver, or without a CSINode, a node passes. A claim's volume is its PV's CSI
source (driver and handle); an unbound claim counts for its class's provisioner, one
volume per claim.

Pods placed earlier in the same burst count: a pod with a volume of a limited driver
cuts the burst (core/volume_burst.py), so the next pods see it on its node.
Not counted, unlike upstream: VolumeAttachments of volumes no pod on the node uses any
more (kubesalvo does not watch them), and in-tree volumes migrated to CSI drivers.

A class filter (``core/plugins/framework.py``), asked once per class with volumes.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

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
    PerNode,
    PluginSpec,
    PodClass,
)

__all__ = [
    "ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED",
    "NAME",
    "claim_volume_id",
    "filter_class",
    "limits",
]

NAME = names.NODE_VOLUME_LIMITS
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"


def limits(storage: volumes.StorageObjects) -> dict[str, dict[str, int]]:
    """Node name -> driver -> its allocatable count, from the CSINodes that give one."""
    found: dict[str, dict[str, int]] = {}
    for csi_node in storage.csi_nodes():
        for driver in (csi_node.get("spec") or {}).get("drivers") or ():
            count = (driver.get("allocatable") or {}).get("count")
            if count is not None:
                node = (csi_node.get("metadata") or {}).get("name") or ""
                found.setdefault(node, {})[driver.get("name") or ""] = int(count)
    return found


def claim_volume_id(claim: volumes.Object, storage: volumes.StorageObjects) -> tuple[str, str]:
    """(driver, unique volume name) of a claim's volume, or ("", "") when not a CSI one:
    its PV's CSI source; an unbound claim (or one whose PV is missing) counts as a volume
    of its own for its class's provisioner."""
    spec = claim.get("spec") or {}
    pv = storage.volume(spec.get("volumeName") or "")
    if pv is not None:
        csi = (pv.get("spec") or {}).get("csi") or {}
        driver, handle = csi.get("driver") or "", csi.get("volumeHandle") or ""
        return (driver, f"{driver}/{handle}") if driver and handle else ("", "")
    class_name = volumes.claim_class(claim)
    storage_class = storage.storage_class(class_name) if class_name else None
    if storage_class is None:
        return "", ""
    driver = storage_class.get("provisioner") or ""
    return driver, f"{driver}/~unbound-{volumes.claim_key(claim)}"


def filter_class(
    args: object, nodes: NodeTable, pod: PodClass, storage: volumes.StorageObjects
) -> ClassFilterResult | None:
    """Filter for one class: the rows where a limited driver's count would be exceeded
    (None: no claim, or no node limits a driver of the pod's volumes)."""
    claims = volumes.pod_claims(pod.spec)  # generic ephemeral volumes count too
    if not claims:
        return None
    limited = limits(storage)
    if not limited:
        return None
    drivers = {driver for per_node in limited.values() for driver in per_node}
    new: dict[str, str] = {}  # unique name -> driver
    for name, _ in claims:
        claim = storage.claim(pod.namespace, name)
        if claim is None:
            # Upstream's Filter would fail every node naming the lookup; the PreFilters of
            # VolumeRestrictions and VolumeBinding (before any Filter) reject such a pod
            # first, so kubesalvo leaves it to them.
            continue
        driver, unique = claim_volume_id(claim, storage)
        if driver in drivers:
            new[unique] = driver
    if not new:
        return None
    attached = _attached(storage, set(new.values()))
    row_names = nodes.node_names()
    failing = np.zeros(len(row_names), dtype=bool)
    for row, node in enumerate(row_names):
        node_limits = limited.get(node or "")
        if not node_limits:
            continue
        on_node = attached.get(node or "", {})
        counts: dict[str, int] = defaultdict(int)
        for unique, driver in new.items():
            if unique not in on_node:
                counts[driver] += 1
        for driver, count in counts.items():
            limit = node_limits.get(driver)
            if limit is not None:
                used = sum(1 for d in on_node.values() if d == driver)
                if used + count > limit:
                    failing[row] = True
    return ClassFilterResult(failing=((ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, failing),))


def _attached(storage: volumes.StorageObjects, drivers: set[str]) -> dict[str, dict[str, str]]:
    """Node name -> unique volume name -> driver, of the pods counted on nodes (only the
    drivers asked about)."""
    found: dict[str, dict[str, str]] = defaultdict(dict)
    for pod_key, claim_keys in storage.pod_claims.items():
        node = storage.pod_nodes.get(pod_key, "")
        for key in claim_keys:
            namespace, _, name = key.partition("/")
            claim = storage.claim(namespace, name)
            if claim is None:
                continue
            driver, unique = claim_volume_id(claim, storage)
            if driver in drivers:
                found[node][unique] = driver
    return found


EVENTS = (
    ClusterEvent(EventResource.CSI_NODE, ActionType.ADD | ActionType.UPDATE_OTHER),
    ClusterEvent(EventResource.POD, ActionType.DELETE),
    ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
    ClusterEvent(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE),
)


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.volumes import NODE_VOLUME_LIMITS

    return NODE_VOLUME_LIMITS


SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, FILTER}),
    reasons={ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: Code.UNSCHEDULABLE},
    events=EVENTS,
    class_filter=filter_class,
    class_filter_reads="volumes",
    per_node=_per_node,
)
