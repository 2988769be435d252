"""VolumeZone: a pod's persistent volumes must be reachable from the node's zone.

As kube-scheduler v1.34: PreFilter reads each claim of the pod (a missing claim, volume
or class rejects it on every node, UnschedulableAndUnresolvable, with the API's
not-found text; an unbound claim of a WaitForFirstConsumer class is left to
VolumeBinding) and collects the zone and region labels of the bound volumes (a value may
list several zones joined by ``__``). Filter: a node with none of the topology labels
passes; any other must carry, for each collected label, one of its values (a beta
label of the volume is also matched by the node's GA label).

A class filter (``core/plugins/framework.py``): one node mask per class and burst.
"""

from __future__ import annotations

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

__all__ = ["ERR_REASON_CONFLICT", "NAME", "filter_class", "zones_of"]

NAME = names.VOLUME_ZONE
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
# In upstream's order.
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
MULTI_ZONE_DELIMITER = "__"


def zones_of(value: str) -> frozenset[str] | None:
    """The zones a label value lists ("a__b"), or None when one of them is empty (the
    label is then ignored, as upstream does with a value it cannot parse)."""
    zones = [zone.strip() for zone in value.split(MULTI_ZONE_DELIMITER)]
    if any(not zone for zone in zones):
        return None
    return frozenset(zones)


def _topologies(
    pod: PodClass, storage: volumes.StorageObjects
) -> list[tuple[str, frozenset[str]]] | str:
    """(label, values) of the pod's bound volumes, or the PreFilter's rejection text."""
    found: list[tuple[str, frozenset[str]]] = []
    for _, name in volumes.claim_volumes(pod.spec):
        if not name:
            return "PersistentVolumeClaim had no name"
        claim = storage.claim(pod.namespace, name)
        if claim is None:
            return volumes.not_found("persistentvolumeclaim", name)
        pv_name = (claim.get("spec") or {}).get("volumeName") or ""
        if not pv_name:
            class_name = volumes.claim_class(claim)
            if not class_name:
                return "PersistentVolumeClaim had no pv name and storageClass name"
            storage_class = storage.storage_class(class_name)
            if storage_class is None:
                return volumes.not_found("storageclass.storage.k8s.io", class_name)
            mode = storage_class.get("volumeBindingMode")
            if mode is None:
                return f'VolumeBindingMode not set for StorageClass "{class_name}"'
            if mode == volumes.WAIT_FOR_FIRST_CONSUMER:
                continue
            return "PersistentVolume had no name"
        pv = storage.volume(pv_name)
        if pv is None:
            return volumes.not_found("persistentvolume", pv_name)
        labels = (pv.get("metadata") or {}).get("labels") or {}
        for key in TOPOLOGY_LABELS:
            if key in labels:
                zones = zones_of(labels[key])
                if zones is not None:
                    found.append((key, zones))
    return found


def filter_class(
    args: object, nodes: NodeTable, pod: PodClass, storage: volumes.StorageObjects
) -> ClassFilterResult | None:
    """PreFilter and Filter for one class (None: no bound volume has a zone, Skip)."""
    topologies = _topologies(pod, storage)
    if isinstance(topologies, str):
        return ClassFilterResult(topologies)
    if not topologies:
        return None
    constrained = np.zeros_like(volumes.every_row(nodes))
    for key in TOPOLOGY_LABELS:
        constrained |= nodes.has_label(key)
    fits = volumes.every_row(nodes)
    for key, zones in topologies:
        values = sorted(zones)
        own = nodes.label_in(key, values)
        ga = nodes.label_in(_GA.get(key, key), values)
        # The node's own label decides when it has it; else its GA label.
        fits &= np.where(nodes.has_label(key), own, ga)
    return ClassFilterResult(failing=((ERR_REASON_CONFLICT, constrained & ~fits),))


EVENTS = (
    ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD),
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE_OTHER),
    ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE_OTHER),
)


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.volumes import VOLUME_ZONE

    return VOLUME_ZONE


SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, FILTER}),
    reasons={ERR_REASON_CONFLICT: Code.UNSCHEDULABLE_AND_UNRESOLVABLE},
    events=EVENTS,
    class_filter=filter_class,
    class_filter_reads="volumes",
    per_node=_per_node,
)
