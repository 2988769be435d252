"""The volume filters for one pod, node by node, written for clarity: what preemption's dry
run and ``explain`` ask, and what the property tests hold the encoder's class filters
(core/plugins/volume_*.py, node_volume_limits.py) to.

Each plugin is built once per pod (its constructor is the PreFilter: it raises
PreFilterRejection or SchedulingError) and then asked about one node at a time, from
the node's labels, as kube-scheduler v1.34's plugins do:

* VolumeRestrictions: every persistentVolumeClaim of the pod must exist; a
  ReadWriteOncePod claim another pod on a node uses fails every node;
* NodeVolumeLimits: the pod's unique CSI volumes (of its claims) per driver, with those
  of the node's pods, within the count the node's CSINode gives the driver;
* VolumeBinding: claims exist, are not lost or being deleted, none is an unbound
  Immediate (or prebound) one; a bound claim's volume must exist and its node affinity
  match the node's labels (the first claim in the pod's order that fails decides);
* VolumeZone: claims, volumes and classes exist; a node with any zone or region label
  must hold, for each such label of the bound volumes, one of the listed zones.

  Unbound WaitForFirstConsumer claims (when the caller binds them): per node, each claim
  by increasing request takes the smallest free volume that fits (the size, mode,
  selector, class, access mode rules are core/volumes.volume_fits_claim's, shared), else
  its class must provision there (allowedTopologies).

  Score (:func:`capacity_score`, with StorageCapacityScoring on): how full the volumes
  those claims take on the node are, else the pools they would be provisioned from.

A generic ephemeral volume is the claim ``<pod>-<volume>`` (the pod read with
``volumes.resolve_ephemeral``, as the runtime reads it): VolumeBinding waits for a
missing one (``waiting for ephemeral volume controller to create the
persistentvolumeclaim "x"``) and refuses one the pod does not control (``PVC ns/x was
not created for pod ns/p (pod is not owner)``), then treats it as any claim;
NodeVolumeLimits counts it; VolumeRestrictions and VolumeZone read
persistentVolumeClaim volumes only, as upstream's do.

Out of this package's scope (``PodInvalid``), as kubesalvo does not implement them yet
and fails such pods with an error: unbound WaitForFirstConsumer claims without a binder,
inline CSI volumes and resource claims (DynamicResources).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from kubesalvo.core import in_tree_disks
from kubesalvo.core.label_selectors import parse_selector, selector_matches
from kubesalvo.core.pernode.framework import (
    Pod,
    PodInvalid,
    PreFilterRejection,
    SchedulingError,
    Status,
)
from kubesalvo.core.pernode.selectors import node_selector_terms
from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import PerNode
from kubesalvo.core.volumes import (
    StorageObjects,
    bound_to_claim,
    claim_key,
    storage_bytes,
    volume_fits_claim,
)

__all__ = [
    "NODE_VOLUME_LIMITS",
    "VOLUME_BINDING",
    "VOLUME_RESTRICTIONS",
    "VOLUME_ZONE",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeRestrictions",
    "VolumeZone",
    "capacity_score",
    "check_in_scope",
]

# Volume sources the per-node filters do not model (inline CSI volumes).
UNMODELLED_VOLUME_SOURCES = frozenset({"csi"})
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
ZONE_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
GA_LABEL = {BETA_ZONE: ZONE, BETA_REGION: REGION}


def check_in_scope(pod: Pod, claims_known: bool = False) -> None:
    """Raise PodInvalid for volumes and claims the per-node filters do not model
    (``claims_known``: the caller gave the pod's DynamicResources cycle state)."""
    spec = pod.get("spec") or {}
    for volume in spec.get("volumes") or ():
        kinds = UNMODELLED_VOLUME_SOURCES.intersection(volume)
        if kinds:
            kind = sorted(kinds)[0]
            raise PodInvalid(
                f"volume {volume.get('name')!r} uses {kind}: not modelled by the per-node filters"
            )
    if spec.get("resourceClaims") and not claims_known:
        raise PodInvalid(
            "resource claims (DynamicResources) are not modelled by the per-node filters"
        )


def _claims(pod: Pod) -> list[str]:
    return [
        (v["persistentVolumeClaim"].get("claimName") or "")
        for v in (pod.get("spec") or {}).get("volumes") or ()
        if v.get("persistentVolumeClaim") is not None
    ]


def _all_claims(pod: Pod) -> list[tuple[str, Mapping[str, Any] | None]]:
    """Every claim of the pod in spec order: (name, None) for a persistentVolumeClaim
    volume, (name, its source) for a generic ephemeral volume, whose claim is
    ``<pod>-<volume>`` (the source names it once the pod is read with
    ``volumes.resolve_ephemeral``, as the runtime reads every pod)."""
    found: list[tuple[str, Mapping[str, Any] | None]] = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if volume.get("persistentVolumeClaim") is not None:
            found.append((volume["persistentVolumeClaim"].get("claimName") or "", None))
        elif volume.get("ephemeral") is not None:
            source = volume["ephemeral"]
            if "claimName" not in source:
                raise SchedulingError(
                    f'generic ephemeral volume "{volume.get("name")}" names no claim: the pod '
                    "was read without its name"
                )
            found.append((source["claimName"], source))
    return found


def _owner_error(pod: Pod, claim: Mapping[str, Any], source: Mapping[str, Any]) -> str:
    """The claim of an ephemeral volume must be controlled by the pod, in its namespace."""
    meta = claim.get("metadata") or {}
    if meta.get("namespace") == _namespace(pod) and any(
        ref.get("controller") and ref.get("uid") == source.get("podUID")
        for ref in meta.get("ownerReferences") or ()
    ):
        return ""
    return (
        f"PVC {meta.get('namespace') or ''}/{meta.get('name') or ''} was not created for pod "
        f"{_namespace(pod)}/{source.get('podName') or ''} (pod is not owner)"
    )


def _request(claim: Mapping[str, Any]) -> int:
    return storage_bytes(((claim.get("spec") or {}).get("resources") or {}).get("requests"))


def _capacity(pv: Mapping[str, Any]) -> int:
    return storage_bytes((pv.get("spec") or {}).get("capacity"))


def _namespace(pod: Pod) -> str:
    return (pod.get("metadata") or {}).get("namespace") or "default"


def _class_name(claim: Mapping[str, Any]) -> str:
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    if "volume.beta.kubernetes.io/storage-class" in annotations:
        return str(annotations["volume.beta.kubernetes.io/storage-class"])
    return str((claim.get("spec") or {}).get("storageClassName") or "")


class _Skip:
    """A plugin with nothing to check for the pod (its PreFilter returned Skip)."""

    node_names: frozenset[str] | None = None

    def filter(self, node: NodeInfo) -> Status | None:
        return None


class VolumeRestrictions(_Skip):
    """A node where a pod mounts an in-tree disk of the pod in a conflicting way fails
    (the rules of core/in_tree_disks.conflict, shared); then a ReadWriteOncePod claim of
    the pod that another pod on some node uses fails every node. The holders are looked
    up in the snapshot's nodes when the filter runs, so a preemption dry run that takes a
    holder off its node sees the claim free."""

    def __init__(self, pod: Pod, storage: StorageObjects, snapshot: Any) -> None:
        self.disks = in_tree_disks.disks(pod.get("spec") or {})
        once: set[str] = set()
        for name in _claims(pod):
            claim = storage.claim(_namespace(pod), name)
            if claim is None:
                raise PreFilterRejection(
                    names.VOLUME_RESTRICTIONS, f'persistentvolumeclaim "{name}" not found'
                )
            if "ReadWriteOncePod" in ((claim.get("spec") or {}).get("accessModes") or ()):
                once.add(name)
        self.holders: list[tuple[NodeInfo, Pod]] = []
        if once:
            namespace = _namespace(pod)
            for node in snapshot.nodes:
                for other in node.pods:
                    if _namespace(other) == namespace and once.intersection(_claims(other)):
                        self.holders.append((node, other))

    def filter(self, node: NodeInfo) -> Status | None:
        for other in node.pods if self.disks else ():
            mounted = in_tree_disks.disks(other.get("spec") or {})
            if any(in_tree_disks.conflict(disk, mounted) for disk in self.disks):
                return Status.unschedulable("node(s) had no available disk")
        for holder_node, holder in self.holders:
            if any(p is holder for p in holder_node.pods):
                return Status.unschedulable(
                    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod "
                    "access mode already in-use by another pod"
                )
        return None


class NodeVolumeLimits(_Skip):
    """Per node: the pod's unique CSI volumes of each driver the node's CSINode limits,
    with those of the pods already on the node (one volume shared counts once), must stay
    within the count."""

    def __init__(self, pod: Pod, storage: StorageObjects) -> None:
        self.storage = storage
        self.new = {}
        for name, _ in _all_claims(pod):  # generic ephemeral volumes' claims count too
            claim = storage.claim(_namespace(pod), name)
            if claim is None:
                continue  # VolumeBinding's PreFilter rejects the pod (before any Filter)
            driver, unique = self._volume(claim)
            if driver:
                self.new[unique] = driver

    def _volume(self, claim: Mapping[str, Any]) -> tuple[str, str]:
        spec = claim.get("spec") or {}
        pv = self.storage.volume(spec.get("volumeName") or "")
        if pv is not None:
            csi = (pv.get("spec") or {}).get("csi") or {}
            if csi.get("driver") and csi.get("volumeHandle"):
                return csi["driver"], f"{csi['driver']}/{csi['volumeHandle']}"
            return "", ""
        storage_class = (
            self.storage.storage_class(_class_name(claim)) if _class_name(claim) else None
        )
        if storage_class is None:
            return "", ""
        driver = storage_class.get("provisioner") or ""
        meta = claim.get("metadata") or {}
        return driver, f"{driver}/~unbound-{meta.get('namespace')}/{meta.get('name')}"

    def filter(self, node: NodeInfo) -> Status | None:
        if not self.new:
            return None
        csi_node = self.storage.csi_node(node.name) or {}
        limits = {
            d.get("name"): d["allocatable"]["count"]
            for d in (csi_node.get("spec") or {}).get("drivers") or ()
            if (d.get("allocatable") or {}).get("count") is not None
        }
        if not limits:
            return None
        attached: dict[str, str] = {}
        for other in node.pods:
            for name, _ in _all_claims(other):
                claim = self.storage.claim(_namespace(other), name)
                if claim is not None:
                    driver, unique = self._volume(claim)
                    if driver:
                        attached[unique] = driver
        new_counts: dict[str, int] = {}
        for unique, driver in self.new.items():
            if unique not in attached:
                new_counts[driver] = new_counts.get(driver, 0) + 1
        for driver, count in new_counts.items():
            if driver in limits:
                used = sum(1 for d in attached.values() if d == driver)
                if used + count > limits[driver]:
                    return Status.unschedulable("node(s) exceed max volume count")
        return None


class VolumeBinding:
    node_names: frozenset[str] | None = None

    def __init__(self, pod: Pod, storage: StorageObjects) -> None:
        self.storage = storage
        self.bound: list[Mapping[str, Any]] = []
        self.delayed: list[Mapping[str, Any]] = []
        unbound_immediate = False
        claims = []
        for name, ephemeral in _all_claims(pod):
            claim = storage.claim(_namespace(pod), name)
            if claim is None and ephemeral is not None:
                self._reject(
                    "waiting for ephemeral volume controller to create the "
                    f'persistentvolumeclaim "{name}"'
                )
            if claim is None:
                self._reject(f'persistentvolumeclaim "{name}" not found')
            assert claim is not None
            spec, meta = claim.get("spec") or {}, claim.get("metadata") or {}
            if (claim.get("status") or {}).get("phase") == "Lost":
                self._reject(
                    f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                    f'"{spec.get("volumeName") or ""}"'
                )
            if meta.get("deletionTimestamp"):
                self._reject(f'persistentvolumeclaim "{name}" is being deleted')
            if ephemeral is not None and (not_owned := _owner_error(pod, claim, ephemeral)):
                self._reject(not_owned)
            claims.append(claim)
        for claim in claims:
            spec, meta = claim.get("spec") or {}, claim.get("metadata") or {}
            if spec.get("volumeName") and "pv.kubernetes.io/bind-completed" in (
                meta.get("annotations") or {}
            ):
                self.bound.append(claim)
                continue
            class_name = _class_name(claim)
            storage_class = storage.storage_class(class_name) if class_name else None
            if storage_class is not None and storage_class.get("volumeBindingMode") is None:
                raise SchedulingError(f'VolumeBindingMode not set for StorageClass "{class_name}"')
            waits = (storage_class or {}).get("volumeBindingMode") == "WaitForFirstConsumer"
            if waits and not spec.get("volumeName"):
                self.delayed.append(claim)
                continue
            unbound_immediate = True
        if unbound_immediate:
            self._reject("pod has unbound immediate PersistentVolumeClaims")
        if self.delayed:
            self._check_delayed(storage)

    def _check_delayed(self, storage: StorageObjects) -> None:
        if not storage.bind_delayed:
            raise PodInvalid("unbound WaitForFirstConsumer claims without a binder")
        self.delayed.sort(key=lambda c: _request(c))

    @staticmethod
    def _reject(message: str) -> None:
        raise PreFilterRejection(names.VOLUME_BINDING, message)

    def filter(self, node: NodeInfo) -> Status | None:
        labels_only = {"metadata": {"labels": node.labels}}
        for claim in self.bound:
            pv = self.storage.volume((claim.get("spec") or {}).get("volumeName") or "")
            if pv is None:
                return Status.unresolvable(
                    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
                )
            required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
            if required is not None and not any(
                term.matches(labels_only) for term in node_selector_terms(required)
            ):
                return Status.unresolvable("node(s) didn't match PersistentVolume's node affinity")
        if self.delayed:
            _, reason = self.delayed_outcome(node)
            if reason:
                return Status.unresolvable(reason)
        return None

    def delayed_choice(self, node: NodeInfo) -> dict[str, str] | None:
        """Claim "ns/name" -> the volume chosen on ``node``, or "" to provision it there;
        None when the node does not do."""
        chosen, reason = self.delayed_outcome(node)
        return None if reason else chosen

    def delayed_outcome(self, node: NodeInfo) -> tuple[dict[str, str], str]:
        """FindPodVolumes for the unbound delayed claims on one node: a claim that names a
        selected node fails every other node; the others, by increasing request, each take
        the smallest free volume that fits them and the node (one prebound to the claim
        first); then the claims to provision (the selected ones, then those left), in
        order, until one cannot be (no provisioner or topology: no volume to bind; too
        little CSIStorageCapacity: not enough storage). The choice, and the reason ("")."""
        bind = "node(s) didn't find available persistent volumes to bind"
        labels_only = {"metadata": {"labels": node.labels}}
        taken: set[str] = set()
        chosen: dict[str, str] = {}
        to_provision: list[Mapping[str, Any]] = []
        for claim in self.delayed:
            annotations = (claim.get("metadata") or {}).get("annotations") or {}
            selected = annotations.get("volume.kubernetes.io/selected-node")
            if selected is not None:
                if selected != node.name:
                    return {}, bind
                to_provision.append(claim)
        for claim in self.delayed:
            annotations = (claim.get("metadata") or {}).get("annotations") or {}
            if "volume.kubernetes.io/selected-node" in annotations:
                continue
            fitting: list[Mapping[str, Any]] = []
            for pv in self.storage.objects["persistentvolumes"].values():
                name = pv["metadata"]["name"]
                if name in taken:
                    continue
                if not volume_fits_claim(claim, pv, self.storage.assumed.get(name)):
                    continue
                required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
                if required is not None and not any(
                    t.matches(labels_only) for t in node_selector_terms(required)
                ):
                    if bound_to_claim(pv, claim):
                        fitting = []
                        break  # the volume prebound to the claim is its only candidate
                    continue
                if bound_to_claim(pv, claim):
                    fitting = [pv]
                    break
                fitting.append(pv)
            if fitting:
                best = min(fitting, key=lambda pv: (_capacity(pv), pv["metadata"]["name"]))
                taken.add(best["metadata"]["name"])
                chosen[claim_key(claim)] = best["metadata"]["name"]
            else:
                to_provision.append(claim)
        for claim in to_provision:
            reason = self._provision_reason(claim, node)
            if reason:
                return {}, reason
            chosen[claim_key(claim)] = ""
        return chosen, ""

    def _provision_reason(self, claim: Mapping[str, Any], node: NodeInfo) -> str:
        class_name = _class_name(claim)
        storage_class = self.storage.storage_class(class_name) or {}
        provisioner = storage_class.get("provisioner") or ""
        if provisioner in ("", "kubernetes.io/no-provisioner"):
            return "node(s) didn't find available persistent volumes to bind"
        terms = storage_class.get("allowedTopologies") or ()
        if terms and not any(
            all(
                node.labels.get(r.get("key") or "") in (r.get("values") or ())
                for r in term.get("matchLabelExpressions") or ()
            )
            for term in terms
        ):
            return "node(s) didn't find available persistent volumes to bind"
        requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
        driver = self.storage.objects["csidrivers"].get(provisioner)
        if "storage" not in requests or not (driver or {}).get("spec", {}).get("storageCapacity"):
            return ""
        size = storage_bytes(requests)
        if self._admitting_pool(class_name, size, node) is not None:
            return ""
        return "node(s) did not have enough free storage"

    def _admitting_pool(
        self, class_name: str, size: int, node: NodeInfo
    ) -> Mapping[str, Any] | None:
        """The first CSIStorageCapacity of the class that holds ``size`` on ``node``."""
        for capacity in self.storage.objects["csistoragecapacities"].values():
            limit = capacity.get("maximumVolumeSize") or capacity.get("capacity")
            if capacity.get("storageClassName") != class_name or limit is None:
                continue
            if storage_bytes({"storage": limit}) < size:
                continue
            selector, error = parse_selector(capacity.get("nodeTopology"))
            if error is None and selector is not None and selector_matches(selector, node.labels):
                return capacity
        return None

    def pool_capacity(self, claim: Mapping[str, Any], node: NodeInfo) -> int | None:
        """The capacity of the pool that admits provisioning ``claim`` on ``node``, or None
        when its capacity is not checked (no request, a driver that does not ask)."""
        class_name = _class_name(claim)
        provisioner = (self.storage.storage_class(class_name) or {}).get("provisioner") or ""
        requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
        driver = self.storage.objects["csidrivers"].get(provisioner)
        if "storage" not in requests or not (driver or {}).get("spec", {}).get("storageCapacity"):
            return None
        pool = self._admitting_pool(class_name, storage_bytes(requests), node)
        assert pool is not None, "provisioned on a node without a pool"
        amount = pool.get("capacity")
        return 0 if amount is None else storage_bytes({"storage": amount})


def capacity_score(
    pod: Pod, storage: StorageObjects, node: NodeInfo, shape: Sequence[tuple[int, int]]
) -> int:
    """VolumeBinding's Score with StorageCapacityScoring on, for a node the pod passes:
    the volumes its unbound delayed claims take there (requested and capacity summed per
    volume class), else, none taken, the claims it provisions there whose capacity a
    CSIStorageCapacity was checked against (requested summed, that pool's capacity, per
    claim class); each class scores the shape (utilization, score 0..10) at
    requested x 100 // capacity (100 when it does not fit), the node their rounded mean."""
    if not (pod.get("spec") or {}).get("volumes"):
        return 0  # every volume plugin skips the pod
    plugin = VolumeBinding(pod, storage)
    if not plugin.delayed:
        return 0
    chosen, reason = plugin.delayed_outcome(node)
    assert not reason, "scored on a node its Filter rejects"
    per_class: dict[str, list[int]] = {}
    for claim in plugin.delayed:  # smallest request first, as matched
        pv_name = chosen.get(claim_key(claim))
        if pv_name:
            pv = storage.objects["persistentvolumes"][pv_name]
            entry = per_class.setdefault(
                (pv.get("spec") or {}).get("storageClassName") or "", [0, 0]
            )
            entry[0] += _request(claim)
            entry[1] += _capacity(pv)
    if not per_class:
        provisioned = [c for c in plugin.delayed if _selected(c)]
        provisioned += [c for c in plugin.delayed if not _selected(c)]
        for claim in provisioned:
            pool = plugin.pool_capacity(claim, node)
            if pool is not None:
                entry = per_class.setdefault(_class_name(claim), [0, 0])
                entry[0] += _request(claim)
                entry[1] = pool  # one pool per class and node: not summed
    if not per_class:
        return 0
    total = 0
    for requested, capacity in per_class.values():
        used = 100 if capacity == 0 or requested > capacity else requested * 100 // capacity
        total += _broken_line(shape, used)
    return math.floor(total / len(per_class) + 0.5)


def _selected(claim: Mapping[str, Any]) -> bool:
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    return "volume.kubernetes.io/selected-node" in annotations


def _broken_line(shape: Sequence[tuple[int, int]], used: int) -> int:
    """The shape's line at ``used``, its scores x10, interpolated towards zero."""
    points = [(u, 10 * score) for u, score in shape]
    if used <= points[0][0]:
        return points[0][1]
    for (u0, s0), (u1, s1) in itertools.pairwise(points):
        if used <= u1:
            step = (s1 - s0) * (used - u0)
            return s0 + int(step / (u1 - u0))  # Go's division truncates towards zero
    return points[-1][1]


class VolumeZone:
    node_names: frozenset[str] | None = None

    def __init__(self, pod: Pod, storage: StorageObjects) -> None:
        self.zones: list[tuple[str, set[str]]] = []
        for name in _claims(pod):
            self._volume_zones(pod, name, storage)

    @staticmethod
    def _reject(message: str) -> None:
        raise PreFilterRejection(names.VOLUME_ZONE, message)

    def _volume_zones(self, pod: Pod, name: str, storage: StorageObjects) -> None:
        if not name:
            self._reject("PersistentVolumeClaim had no name")
        claim = storage.claim(_namespace(pod), name)
        if claim is None:
            self._reject(f'persistentvolumeclaim "{name}" not found')
        assert claim is not None
        pv_name = (claim.get("spec") or {}).get("volumeName") or ""
        if not pv_name:
            class_name = _class_name(claim)
            if not class_name:
                self._reject("PersistentVolumeClaim had no pv name and storageClass name")
            storage_class = storage.storage_class(class_name)
            if storage_class is None:
                self._reject(f'storageclass.storage.k8s.io "{class_name}" not found')
            assert storage_class is not None
            mode = storage_class.get("volumeBindingMode")
            if mode is None:
                self._reject(f'VolumeBindingMode not set for StorageClass "{class_name}"')
            if mode != "WaitForFirstConsumer":
                self._reject("PersistentVolume had no name")
            return
        pv = storage.volume(pv_name)
        if pv is None:
            self._reject(f'persistentvolume "{pv_name}" not found')
        assert pv is not None
        labels = (pv.get("metadata") or {}).get("labels") or {}
        for key in ZONE_LABELS:
            if key in labels:
                zones = {z.strip() for z in labels[key].split("__")}
                if "" not in zones:
                    self.zones.append((key, zones))

    def filter(self, node: NodeInfo) -> Status | None:
        if not any(key in node.labels for key in ZONE_LABELS):
            return None
        for key, zones in self.zones:
            # The node's own label decides when it has it; else the GA one.
            value = node.labels.get(key, node.labels.get(GA_LABEL.get(key, key)))
            if value is None or value not in zones:
                return Status.unresolvable("node(s) had no available volume zone")
        return None


# Their contributions to the per-node evaluator (``PodEvaluator``: its ``storage`` and
# ``snapshot``), each loaded by its plugin's spec. A pod without volumes is skipped by every
# volume plugin.


def _has_volumes(pod: Pod) -> bool:
    return bool((pod.get("spec") or {}).get("volumes"))


def _restrictions(evaluator: Any, pod: Pod) -> VolumeRestrictions | None:
    if not _has_volumes(pod):
        return None
    return VolumeRestrictions(pod, evaluator.storage, evaluator.snapshot)


def _limits(evaluator: Any, pod: Pod) -> NodeVolumeLimits | None:
    return NodeVolumeLimits(pod, evaluator.storage) if _has_volumes(pod) else None


def _binding(evaluator: Any, pod: Pod) -> VolumeBinding | None:
    return VolumeBinding(pod, evaluator.storage) if _has_volumes(pod) else None


def _zone(evaluator: Any, pod: Pod) -> VolumeZone | None:
    return VolumeZone(pod, evaluator.storage) if _has_volumes(pod) else None


def _capacity_scores(evaluator: Any, pod: Pod, feasible: list[NodeInfo]) -> dict[str, int] | None:
    # Scores only with StorageCapacityScoring on (its args then have a shape).
    shape = [
        (pt.utilization, pt.score) for pt in evaluator.profile.args_of(names.VOLUME_BINDING).shape
    ]
    if not shape:
        return None
    return {n.name: capacity_score(pod, evaluator.storage, n, shape) for n in feasible}


VOLUME_RESTRICTIONS = PerNode(filter=_restrictions)
NODE_VOLUME_LIMITS = PerNode(filter=_limits)
VOLUME_BINDING = PerNode(filter=_binding, score=_capacity_scores)
VOLUME_ZONE = PerNode(filter=_zone)
