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

* Filter, for unbound claims of a WaitForFirstConsumer class (when the caller binds what
  Reserve chooses, ``StorageObjects.bind_delayed``; else the attempt fails with an error
  saying so): per node, claims by increasing request each take the smallest free static
  volume that fits them (class, size, volume and access modes, selector, node affinity);
  the rest must be provisionable there (a provisioner, allowedTopologies:
  ``node(s) didn't find available persistent volumes to bind``; CSIStorageCapacity when
  the CSIDriver asks for it: ``node(s) did not have enough free storage``); a claim that
  names a selected node admits that node only;
* Reserve (:func:`reserve`, run by core/volume_burst.py for each placed pod): the chosen
  volumes are assumed so that no later pod takes them; PreBind and Unreserve are the
  runtime's (sched/volume_prebind.py).

Generic ephemeral volumes count as claims ``<pod>-<volume>`` (``volumes.resolve_ephemeral``
names them when the pod is read): a missing one waits for the ephemeral-volume controller
(``waiting for ephemeral volume controller to create the persistentvolumeclaim "x"``), one
the pod does not control is refused (``PVC ns/x was not created for pod ns/p (pod is not
owner)``), both UnschedulableAndUnresolvable in PreFilter.

Score needs the StorageCapacityScoring gate (alpha and off in v1.34, beta and on in
v1.37; ``--feature-gates``, sched/config/gates.py): off, the args have no ``shape`` and
every node scores 0; on, :func:`filter_class` also answers each row's capacity score
(core/volume_capacity.py), which the encoder adds, weighted, to the class's
fixed scores. A class's answer reads the storage as the burst's segment finds it
(core/volume_burst.py), so each pod is scored after the volumes earlier pods took.

The filter is a class filter (``core/plugins/framework.py``): :func:`filter_class` runs
once per class of pods and burst, for classes with volumes only, and answers with node
masks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesalvo.core import volume_capacity, volumes
from kubesalvo.core.args_reading import INT64_MAX, ArgsDecoder, build, open_args
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
    PerNode,
    PluginSpec,
    PodClass,
    check,
    non_negative,
)
from kubesalvo.core.plugins.node_resources_fit import (
    MAX_CUSTOM_PRIORITY_SCORE,
    ShapePoint,
    read_shape,
    shape_problems,
)

__all__ = [
    "DEFAULT_SHAPE",
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
WAITING_EPHEMERAL = (
    'waiting for ephemeral volume controller to create the persistentvolumeclaim "{}"'
)
# A pod handed to core without resolve_ephemeral: its claim's name is unknown.
UNRESOLVED_EPHEMERAL = (
    'generic ephemeral volume "{}" names no claim: the pod was read without its name'
)


# The shape kube-scheduler defaults to when StorageCapacityScoring is on: the emptier
# the storage a pod's claims would use, the higher the node scores.
DEFAULT_SHAPE = (ShapePoint(0, MAX_CUSTOM_PRIORITY_SCORE), ShapePoint(100, 0))


@dataclass(frozen=True)
class VolumeBindingArgs:
    """VolumeBindingArgs: how long PreBind waits for the volumes, in seconds, and the
    capacity score's shape (utilization 0..100 -> score 0..10). An empty ``shape`` means
    the StorageCapacityScoring gate is off, and VolumeBinding scores every node 0; the
    configuration reader gives it :data:`DEFAULT_SHAPE` when the gate is on."""

    bind_timeout_seconds: int = 600
    shape: tuple[ShapePoint, ...] = ()

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        found = non_negative(
            "bindTimeoutSeconds",
            self.bind_timeout_seconds,
            "invalid BindTimeoutSeconds, should not be a negative value",
        )
        if self.shape:
            found.extend(shape_problems("shape", self.shape))
        return found


def filter_class(
    args: VolumeBindingArgs | None,
    nodes: NodeTable,
    pod: PodClass,
    storage: volumes.StorageObjects,
) -> ClassFilterResult | None:
    """PreFilter and Filter for one class of pods (None: it has no claim, PreFilter Skip)."""
    claims = []
    for volume in pod.spec.get("volumes") or ():
        if volume.get("ephemeral") is not None and "claimName" not in volume["ephemeral"]:
            # only a pod read without its name (resolve_ephemeral) has one so
            return ClassFilterResult(error=UNRESOLVED_EPHEMERAL.format(volume.get("name")))
    for name, ephemeral in volumes.pod_claims(pod.spec):
        claim = storage.claim(pod.namespace, name)
        if claim is None:
            if ephemeral is not None:  # normal just after the pod is made
                return ClassFilterResult(WAITING_EPHEMERAL.format(name))
            return ClassFilterResult(volumes.not_found("persistentvolumeclaim", name))
        if (claim.get("status") or {}).get("phase") == "Lost":
            pv_name = (claim.get("spec") or {}).get("volumeName") or ""
            return ClassFilterResult(
                f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{pv_name}"'
            )
        if (claim.get("metadata") or {}).get("deletionTimestamp"):
            return ClassFilterResult(f'persistentvolumeclaim "{name}" is being deleted')
        if ephemeral is not None:
            not_owned = volumes.ephemeral_owner_error(pod.namespace, claim, ephemeral)
            if not_owned:
                return ClassFilterResult(not_owned)
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
    failing = _bound_claims(nodes, bound, storage)
    counted = False
    if storage.counted:  # a column of the segment counts their free volumes per node
        left = [c for c in delayed if volumes.claim_key(c) not in storage.counted]
        counted, delayed = len(left) < len(delayed), left
    if not delayed:
        # A counted pod's one delayed claim: its score is the segment's, per row.
        scored = counted and args is not None and bool(args.shape)
        return ClassFilterResult(failing=failing, scores=storage.counted_scores if scored else None)
    unsupported = _unsupported(delayed, storage)
    if unsupported:
        return ClassFilterResult(error=unsupported)
    matching = [c for c in delayed if _selected_node(c) is None]
    # The candidates of the claims to match, found once for the filter and the score.
    found = volumes.delayed_claims(nodes, matching, storage) if matching else None
    codes = unbound_codes(nodes, delayed, storage, found)
    if isinstance(codes, str):
        return ClassFilterResult(error=codes)
    # A row failing a bound claim counts under that reason (one reason per row here;
    # upstream would list both on a row failing both).
    unbound = (
        (ERR_REASON_BIND_CONFLICT, codes == _BIND),
        (ERR_REASON_NOT_ENOUGH_SPACE, codes == _SPACE),
    )
    scores = None
    if args is not None and args.shape:  # StorageCapacityScoring on
        selected = [c for c in delayed if _selected_node(c) is not None]
        scores = volume_capacity.scores(args.shape, nodes, selected, found, storage, codes == _OK)
    return ClassFilterResult(failing=(*failing, *unbound), scores=scores)


def scores_capacity(args: VolumeBindingArgs | None) -> bool:
    """Whether VolumeBinding scores by capacity (StorageCapacityScoring on)."""
    return args is not None and bool(args.shape)


def _unsupported(delayed: list[volumes.Object], storage: volumes.StorageObjects) -> str:
    """Why kubesalvo cannot place a pod with these unbound delayed claims yet, or ""."""
    name = (delayed[0].get("metadata") or {}).get("name") or ""
    if not storage.bind_delayed:
        return NOT_YET_DELAYED.format(name)
    return ""


def _selected_node(claim: volumes.Object) -> str | None:
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    return annotations.get(volumes.ANN_SELECTED_NODE)


# Per row, how the unbound delayed claims fare (upstream reports one of the two reasons).
_OK, _BIND, _SPACE = 0, 1, 2


def unbound_codes(
    nodes: NodeTable,
    delayed: list[volumes.Object],
    storage: volumes.StorageObjects,
    found: volumes.DelayedClaims | None = None,
) -> np.ndarray | str:
    """Per row: 0 when the unbound delayed claims can all be matched to distinct static
    volumes (each the smallest that fits, claims by increasing request) or provisioned,
    1 (no volume to bind) or 2 (not enough free storage) as the first claim to provision
    that fails there says; or the error that ends the attempt. A claim that already
    names a selected node (a provisioning asked for earlier) admits that node only, and
    is provisioned there, before the others. ``found``: the candidates of the claims
    that name no selected node, when the caller has them already."""
    selected = [c for c in delayed if _selected_node(c) is not None]
    matching = [c for c in delayed if _selected_node(c) is None]
    codes = np.zeros(len(volumes.every_row(nodes)), dtype=np.int8)
    to_provision = []
    if selected:
        row_names = nodes.node_names()
        for claim in selected:
            wanted = _selected_node(claim)
            elsewhere = ~np.array([name == wanted for name in row_names], dtype=bool)
            codes[elsewhere & (codes == _OK)] = _BIND
            code = _provision_code(nodes, claim, storage)
            if isinstance(code, str):
                return code
            to_provision.append(code)
    first = _first_failing(to_provision, len(codes))
    if matching:
        if found is None:
            found = volumes.delayed_claims(nodes, matching, storage)
        claim_codes = []
        for claim in found.claims:
            code = _provision_code(nodes, claim, storage)
            if isinstance(code, str):
                return code
            claim_codes.append(code)
        reached = np.zeros(len(codes), dtype=bool)
        for masks in found.masks:
            for mask in masks:
                reached |= mask
        if len(found.claims) == 1:
            unmatched = _first_failing(claim_codes, len(codes))
            unmatched[reached] = _OK  # a volume on the row takes the claim
        else:
            unmatched = _first_failing(claim_codes, len(codes))
            for row in np.flatnonzero(reached).tolist():
                left = [i for i, pv in enumerate(found.choose(row)) if pv is None]
                unmatched[row] = next(
                    (claim_codes[i][row] for i in left if claim_codes[i][row]), _OK
                )
        first = np.where(first == _OK, unmatched, first)
    return np.where(codes == _OK, first, codes)


def _provision_code(
    nodes: NodeTable, claim: volumes.Object, storage: volumes.StorageObjects
) -> np.ndarray | str:
    found = volumes.provisioning(nodes, claim, storage)
    if isinstance(found, str):
        return found
    allowed, enough = found
    return np.where(~allowed, _BIND, np.where(~enough, _SPACE, _OK)).astype(np.int8)


def _first_failing(codes: list[np.ndarray], rows: int) -> np.ndarray:
    out = np.zeros(rows, dtype=np.int8)
    for code in codes:
        out = np.where(out == _OK, code, out)
    return out


def reserve(
    nodes: NodeTable, row: int, pod: PodClass, storage: volumes.StorageObjects
) -> list[tuple[str, str]]:
    """Reserve for a pod placed on ``row``: (claim "ns/name", the volume chosen for it, or
    "" to provision it there) for each unbound delayed claim, the volumes assumed in
    ``storage`` so that no later pod takes them."""
    delayed = []
    out = []
    for name, _ in volumes.pod_claims(pod.spec):
        claim = storage.claim(pod.namespace, name)
        if claim is None or volumes.is_fully_bound(claim):
            continue
        if (claim.get("spec") or {}).get("volumeName"):
            continue
        if _selected_node(claim) is not None:
            out.append((volumes.claim_key(claim), ""))  # provisioned on its node
        else:
            delayed.append(claim)
    if not delayed:
        return out
    found = volumes.delayed_claims(nodes, delayed, storage)
    for claim, pv in zip(found.claims, found.choose(row), strict=True):
        key = volumes.claim_key(claim)
        if pv is None:
            out.append((key, ""))
        else:
            storage.assumed[pv["metadata"]["name"]] = key
            out.append((key, pv["metadata"]["name"]))
    return out


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


def read_args(d: ArgsDecoder, raw: Any, path: str) -> VolumeBindingArgs:
    """VolumeBindingArgs from its pluginConfig document (``shape`` by the feature gate)."""
    f = open_args(d, raw, path, NAME, ("bindTimeoutSeconds", "shape"))
    timeout = f.integer("bindTimeoutSeconds", 600, INT64_MAX)
    assert timeout is not None
    shape: tuple[ShapePoint, ...] = ()
    if not d.gates.storage_capacity_scoring:
        if f.has("shape") and f.raw("shape") is not None:
            # Off (v1.34's default): kube-scheduler refuses it, so that it cannot take
            # effect unseen the day the gate turns on.
            d.invalid(
                f.at("shape"),
                f.raw("shape"),
                "unexpected field `shape`, remove it or turn on the feature gate "
                "StorageCapacityScoring",
            )
    else:
        # On: an empty or missing shape takes upstream's default, then the model
        # validates it as ValidateVolumeBindingArgs does.
        shape = read_shape(d, f.raw("shape"), f.at("shape")) or DEFAULT_SHAPE
    return build(d, path, lambda: VolumeBindingArgs(timeout, shape), VolumeBindingArgs())


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.volumes import VOLUME_BINDING

    return VOLUME_BINDING


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
    args_reader=read_args,
    per_node=_per_node,
)
