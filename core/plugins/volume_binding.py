"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, or bindable, on the node.

What kubesalvo implements (kube-scheduler v1.34's texts and codes):

* PreFilter, for pods with claims: a claim that does not exist (``persistentvolumeclaim
  "x" not found``), a claim whose volume is lost, a claim being deleted, and unbound
  claims of an Immediate class (``pod has unbound immediate PersistentVolumeClaims``)
  reject the pod on every node, UnschedulableAndUnresolvable;
* Filter, for bound claims: the node must satisfy each bound volume's node affinity
  (``node(s) didn't match PersistentVolume's node affinity``); a claim bound to a volume
  that does not exist fails every node (``node(s) unavailable due to one or more pvc(s) bound to
  non-existent pv(s)``).

Not yet implemented, and never silently: a claim of a WaitForFirstConsumer class that is
still unbound (static PV matching, provisioning, Reserve, PreBind) and generic ephemeral
volumes fail the pod's attempt with an error saying so, so such a pod stays pending
instead of being bound where its volume cannot follow. Its Score needs the
StorageCapacityScoring feature (off in v1.34), so it always adds 0.

The filter is a class filter (``core/plugins/framework.py``): :func:`filter_class` runs
once per class of pods and burst, for classes with volumes only, and answers with node
masks built from the bound volumes' node affinity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubesalvo.core import volumes
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    PRE_BIND,
    PRE_FILTER,
    PRE_SCORE,
    RESERVE,
    SCORE,
    ActionType,
    ClassFilterResult,
    ClusterEvent,
    Code,
    EventResource,
    FieldError,
    NodeTable,
    PluginSpec,
    PodClass,
    check,
    non_negative,
)

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "NAME",
    "UNBOUND_IMMEDIATE",
    "VolumeBindingArgs",
    "filter_class",
]

NAME = names.VOLUME_BINDING

ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
# kubesalvo's own errors for what it does not do yet (the pod stays pending, retried).
NOT_YET_DELAYED = (
    "kubesalvo does not bind WaitForFirstConsumer claims yet (VolumeBinding): "
    'persistentvolumeclaim "{}" is unbound'
)
NOT_YET_EPHEMERAL = (
    'kubesalvo does not schedule generic ephemeral volumes yet (VolumeBinding): volume "{}"'
)


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


def filter_class(
    args: VolumeBindingArgs | None,
    nodes: NodeTable,
    pod: PodClass,
    storage: volumes.StorageObjects,
) -> ClassFilterResult | None:
    """PreFilter and Filter for one class of pods (None: it has no claim, PreFilter Skip)."""
    claims = []
    for volume in pod.spec.get("volumes") or ():
        source = volume.get("persistentVolumeClaim")
        if source is None:
            if volume.get("ephemeral") is not None:
                return ClassFilterResult(error=NOT_YET_EPHEMERAL.format(volume.get("name")))
            continue
        name = source.get("claimName") or ""
        claim = storage.claim(pod.namespace, name)
        if claim is None:
            return ClassFilterResult(volumes.not_found("persistentvolumeclaim", name))
        if (claim.get("status") or {}).get("phase") == "Lost":
            pv_name = (claim.get("spec") or {}).get("volumeName") or ""
            return ClassFilterResult(
                f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{pv_name}"'
            )
        if (claim.get("metadata") or {}).get("deletionTimestamp"):
            return ClassFilterResult(f'persistentvolumeclaim "{name}" is being deleted')
        claims.append(claim)
    if not claims:
        return None
    bound = []
    delayed = []
    immediate = False
    for claim in claims:
        if volumes.is_fully_bound(claim):
            bound.append(claim)
            continue
        try:
            delay = volumes.delays_binding(claim, storage)
        except volumes.BindingModeUnset as error:
            return ClassFilterResult(error=str(error))
        if delay and not (claim.get("spec") or {}).get("volumeName"):
            delayed.append(claim)
        else:
            immediate = True  # prebound claims count as immediate ones, as upstream
    if immediate:
        return ClassFilterResult(UNBOUND_IMMEDIATE)
    if delayed:
        name = (delayed[0].get("metadata") or {}).get("name") or ""
        return ClassFilterResult(error=NOT_YET_DELAYED.format(name))
    return ClassFilterResult(failing=_bound_claims(nodes, bound, storage))


def _bound_claims(
    nodes: NodeTable, claims: list[volumes.Object], storage: volumes.StorageObjects
) -> tuple[tuple[str, np.ndarray], ...]:
    """checkBoundClaims over every node: per node the first claim, in the pod's order,
    whose volume is missing (every node still open fails) or whose node affinity the
    node does not satisfy decides."""
    open_rows = volumes.every_row(nodes)
    conflict = np.zeros_like(open_rows)
    missing = np.zeros_like(open_rows)
    for claim in claims:
        pv = storage.volume((claim.get("spec") or {}).get("volumeName") or "")
        if pv is None:
            missing = open_rows
            break
        required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
        if required is None:
            continue
        failing = open_rows & ~nodes.labels_match(required)
        conflict |= failing
        open_rows = open_rows & ~failing
    return ((ERR_REASON_NODE_CONFLICT, conflict), (ERR_REASON_PV_NOT_EXIST, missing))


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
_UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, FILTER, RESERVE, PRE_BIND, PRE_SCORE, SCORE}),
    args=VolumeBindingArgs,
    # Filter's reasons in the order it reports them; every one is unresolvable there.
    reasons={
        ERR_REASON_NODE_CONFLICT: _UNRESOLVABLE,
        ERR_REASON_BIND_CONFLICT: _UNRESOLVABLE,
        ERR_REASON_NOT_ENOUGH_SPACE: _UNRESOLVABLE,
        ERR_REASON_PV_NOT_EXIST: _UNRESOLVABLE,
    },
    events=EVENTS,
    class_filter=filter_class,
    class_filter_reads="volumes",
)
