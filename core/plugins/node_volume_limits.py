"""NodeVolumeLimits: the number of CSI volumes a node may attach.

kube-scheduler v1.34's CSI limits: a node whose CSINode gives a driver an allocatable
count takes a pod only while its unique volumes of that driver, with those of the pods
already there (and those attached), stay within the count
(``node(s) exceed max volume count``, Unschedulable). Without a count for the driver,
or without a CSINode, every node passes.

What kubesalvo implements: the pods for which no count applies pass, as upstream. The
count itself is not implemented yet, and never silently: a pod with a volume of a CSI
driver that some CSINode limits fails its attempt with an error saying so, and stays
pending. A class filter (``core/plugins/framework.py``), asked once per class with
volumes.
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

__all__ = ["ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED", "NAME", "filter_class", "limited_drivers"]

NAME = names.NODE_VOLUME_LIMITS
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
NOT_YET = (
    "kubesalvo does not count CSI volumes against node limits yet (NodeVolumeLimits): "
    'CSI driver "{}" has an allocatable count on node {}'
)


def limited_drivers(storage: volumes.StorageObjects) -> dict[str, str]:
    """Driver -> the first node (by name) whose CSINode gives it an allocatable count."""
    found: dict[str, str] = {}
    for csi_node in sorted(storage.csi_nodes(), key=lambda n: n["metadata"]["name"]):
        for driver in (csi_node.get("spec") or {}).get("drivers") or ():
            if (driver.get("allocatable") or {}).get("count") is not None:
                found.setdefault(driver.get("name") or "", csi_node["metadata"]["name"])
    return found


def _driver(claim: volumes.Object, storage: volumes.StorageObjects) -> str:
    """The CSI driver of a claim's volume: its PV's, else its class's provisioner."""
    pv = storage.volume((claim.get("spec") or {}).get("volumeName") or "")
    if pv is not None:
        return str(((pv.get("spec") or {}).get("csi") or {}).get("driver") or "")
    storage_class = storage.storage_class(volumes.claim_class(claim))
    return str((storage_class or {}).get("provisioner") or "")


def filter_class(
    args: object, nodes: NodeTable, pod: PodClass, storage: volumes.StorageObjects
) -> ClassFilterResult | None:
    """None (Skip, or every node passes) unless a count could apply to the pod."""
    claims = volumes.claim_volumes(pod.spec)
    if not claims:
        return None
    limited = limited_drivers(storage)
    if not limited:
        return None
    for _, name in claims:
        claim = storage.claim(pod.namespace, name)
        if claim is None:
            continue  # VolumeBinding and VolumeRestrictions reject the pod first
        driver = _driver(claim, storage)
        if driver in limited:
            return ClassFilterResult(error=NOT_YET.format(driver, limited[driver]))
    return None


EVENTS = (
    ClusterEvent(EventResource.CSI_NODE, ActionType.ADD | ActionType.UPDATE_OTHER),
    ClusterEvent(EventResource.POD, ActionType.DELETE),
    ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
    ClusterEvent(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE),
)
SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, FILTER}),
    reasons={ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: Code.UNSCHEDULABLE},
    events=EVENTS,
    class_filter=filter_class,
    class_filter_reads="volumes",
)
