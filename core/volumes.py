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

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core import in_tree_disks
from kubesalvo.core.label_selectors import parse_selector, selector_matches
from kubesalvo.core.quantity import parse_quantity

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
    "ephemeral_owner_error",
    "every_row",
    "is_fully_bound",
    "not_found",
    "pod_claims",
    "resolve_ephemeral",
]

Object = Mapping[str, Any]

# The PV controller marks a claim whose binding it finished with this annotation.
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
# The scheduler asks a provisioner for a volume on a node with this claim annotation.
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
# The beta annotation that still wins over spec.storageClassName.
ANN_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"

# The resource column in which core/volume_slots.py counts a segment's free local volumes
# per node (no node reports it; it is empty between segments).
FREE_LOCAL_VOLUMES = "kubesalvo.io/free-local-volumes"

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
    # Volumes reserved for a claim ("ns/name") by a placement whose binding is not seen
    # yet (upstream's assume cache): no other claim may take them meanwhile.
    assumed: dict[str, str] = field(default_factory=dict)
    # Per placed pod (its key), what Reserve chose for its unbound delayed claims, until
    # its PreBind writes it: (claim "ns/name", volume name or "" to provision)
    reserved: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # Pods counted on nodes (bound, assumed or placed by a burst) that use each claim:
    # claim "ns/name" -> pod keys, and pod key -> its claims (VolumeRestrictions' check
    # of ReadWriteOncePod claims in use across the cluster)
    claim_users: dict[str, set[str]] = field(default_factory=dict)
    pod_claims: dict[str, list[str]] = field(default_factory=dict)
    pod_nodes: dict[str, str] = field(default_factory=dict)  # pod key -> its node's name
    # In-tree disks of the pods counted on each node (VolumeRestrictions' disk conflicts):
    # node name -> pod key -> its disk volumes, and pod key -> its node's name
    node_disks: dict[str, dict[str, list[Object]]] = field(default_factory=dict)
    disk_nodes: dict[str, str] = field(default_factory=dict)
    # Whether the caller binds the claims it reserves (the runtime's VolumeBinding PreBind,
    # or an in-process simulation): without it, unbound delayed claims are not placed.
    bind_delayed: bool = False
    # Unbound delayed claims ("ns/name") whose free volumes a segment of a burst counts
    # per node in a resource column (core/volume_burst.py): VolumeBinding's class filter
    # leaves them to that column while the segment is placed.
    counted: frozenset[str] = frozenset()
    # While such a segment is placed with StorageCapacityScoring on: VolumeBinding's score
    # per row for its counted pods (the same for each of them: core/volume_slots.py).
    counted_scores: npt.NDArray[np.int64] | None = None

    @staticmethod
    def key(kind: str, obj: Object) -> str:
        meta = obj.get("metadata") or {}
        name = meta.get("name") or ""
        if kind in NAMESPACED:
            return f"{meta.get('namespace') or 'default'}/{name}"
        return str(name)

    def put(self, kind: str, obj: Object) -> None:
        key = self.key(kind, obj)
        self.objects[kind][key] = obj
        self.version += 1
        if kind == VOLUMES and (obj.get("spec") or {}).get("claimRef"):
            # The binding is seen: the volume's own claimRef now keeps others off it.
            self.assumed.pop(key, None)

    def delete(self, kind: str, obj: Object) -> None:
        if self.objects[kind].pop(self.key(kind, obj), None) is not None:
            self.version += 1

    def copy(self) -> StorageObjects:
        """A copy that later changes to this one do not reach (the objects are shared:
        nothing changes an object, a change replaces it)."""
        return StorageObjects(
            objects={kind: dict(by_key) for kind, by_key in self.objects.items()},
            version=self.version,
            assumed=dict(self.assumed),
            reserved=dict(self.reserved),
            claim_users={claim: set(users) for claim, users in self.claim_users.items()},
            pod_claims=dict(self.pod_claims),
            pod_nodes=dict(self.pod_nodes),
            node_disks={node: dict(pods) for node, pods in self.node_disks.items()},
            disk_nodes=dict(self.disk_nodes),
            bind_delayed=self.bind_delayed,
            counted=self.counted,
            counted_scores=self.counted_scores,
        )

    def use(self, pod_key: str, namespace: str, spec: Mapping[str, Any], node: str) -> None:
        """A pod counted on ``node`` uses the claims (generic ephemeral ones too:
        NodeVolumeLimits counts them, no other pod can use them) and in-tree disks of its
        spec."""
        claims = [f"{namespace}/{name}" for name, _ in pod_claims(spec)]
        disks = in_tree_disks.disks(spec)
        if not claims and not disks:
            return
        self.unuse(pod_key)
        if disks:
            self.node_disks.setdefault(node, {})[pod_key] = disks
            self.disk_nodes[pod_key] = node
        if not claims:
            return
        self.pod_claims[pod_key] = claims
        self.pod_nodes[pod_key] = node
        for claim in claims:
            self.claim_users.setdefault(claim, set()).add(pod_key)

    def unuse(self, pod_key: str) -> None:
        node = self.disk_nodes.pop(pod_key, None)
        if node is not None:
            on_node = self.node_disks[node]
            del on_node[pod_key]
            if not on_node:
                del self.node_disks[node]
        self.pod_nodes.pop(pod_key, None)
        for claim in self.pod_claims.pop(pod_key, ()):
            users = self.claim_users.get(claim)
            if users is not None:
                users.discard(pod_key)
                if not users:
                    del self.claim_users[claim]

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


def resolve_ephemeral(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod with each generic ephemeral volume naming its claim, ``<pod>-<volume>``
    (the claim the ephemeral-volume controller makes for it), and the pod that must own
    it: ``ephemeral`` becomes ``{"claimName", "podName", "podUID"}`` (the template is of no
    use to a scheduler). A class of pods is keyed by its spec, so pods with such volumes
    form classes of their own. Pods without them are returned as they are."""
    spec = pod.get("spec") or {}
    found = spec.get("volumes") or ()
    if not any(v.get("ephemeral") is not None for v in found):
        return pod
    meta = pod.get("metadata") or {}
    name = meta.get("name") or ""
    resolved = []
    for volume in found:
        source = volume.get("ephemeral")
        if source is not None and "claimName" not in source:
            source = {
                "claimName": f"{name}-{volume.get('name') or ''}",
                "podName": name,
                "podUID": meta.get("uid") or "",
            }
            volume = {**volume, "ephemeral": source}
        resolved.append(volume)
    return {**pod, "spec": {**spec, "volumes": resolved}}


def pod_claims(spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any] | None]]:
    """VolumeBinding's claims of a pod, in spec order: (claim name, None) for a
    persistentVolumeClaim volume, (claim name, the resolved ephemeral source) for a
    generic ephemeral volume (see :func:`resolve_ephemeral`; one not resolved names no
    claim and is left out)."""
    found: list[tuple[str, Mapping[str, Any] | None]] = []
    for volume in spec.get("volumes") or ():
        source = volume.get("persistentVolumeClaim")
        if source is not None:
            found.append((source.get("claimName") or "", None))
            continue
        ephemeral = volume.get("ephemeral")
        if ephemeral is not None and "claimName" in ephemeral:
            found.append((ephemeral["claimName"], ephemeral))
    return found


def ephemeral_owner_error(namespace: str, claim: Object, source: Mapping[str, Any]) -> str:
    """component-helpers' VolumeIsForPod: "" when the pod controls the claim, else the
    text saying the claim was not made for it."""
    meta = claim.get("metadata") or {}
    owned = any(
        ref.get("controller") and ref.get("uid") == source.get("podUID")
        for ref in meta.get("ownerReferences") or ()
    )
    claim_namespace = meta.get("namespace") or ""
    if owned and claim_namespace == namespace:
        return ""
    return (
        f"PVC {claim_namespace}/{meta.get('name') or ''} was not created for pod "
        f"{namespace}/{source.get('podName') or ''} (pod is not owner)"
    )


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


# --- unbound WaitForFirstConsumer claims: static volumes that fit them -------------------

NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
FILESYSTEM = "Filesystem"


def storage_bytes(amounts: Mapping[str, Any] | None) -> int:
    """The ``storage`` quantity of a request or capacity map, in bytes (0 when absent)."""
    value = (amounts or {}).get("storage")
    if value is None:
        return 0
    return math.ceil(parse_quantity(value))


def claim_key(claim: Object) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def bound_to_claim(pv: Object, claim: Object) -> bool:
    """IsVolumeBoundToClaim: the volume's claimRef names this claim (and its UID, if set)."""
    ref = (pv.get("spec") or {}).get("claimRef")
    if not ref:
        return False
    meta = claim.get("metadata") or {}
    if ref.get("name") != meta.get("name") or ref.get("namespace") != meta.get("namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def volume_fits_claim(claim: Object, pv: Object, assumed_for: str | None) -> bool:
    """FindMatchingVolume's checks that do not depend on the node, for an unbound claim of
    a delayed class: free (or prebound to this claim), big enough, the same volume mode,
    not being deleted, Available, the claim's selector, class and access modes.
    ``assumed_for``: the claim a burst or a binding in flight reserved the volume for."""
    key = claim_key(claim)
    if assumed_for is not None and assumed_for != key:
        return False
    spec, pv_spec = claim.get("spec") or {}, pv.get("spec") or {}
    if pv_spec.get("claimRef") and not bound_to_claim(pv, claim):
        return False
    if storage_bytes(pv_spec.get("capacity")) < storage_bytes(
        (spec.get("resources") or {}).get("requests")
    ):
        return False
    if (spec.get("volumeMode") or FILESYSTEM) != (pv_spec.get("volumeMode") or FILESYSTEM):
        return False
    if (pv.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if bound_to_claim(pv, claim) or assumed_for == key:
        return True
    if (pv.get("status") or {}).get("phase") != "Available":
        return False
    selector, error = parse_selector(spec.get("selector"))
    if error is not None:
        return False
    labels = (pv.get("metadata") or {}).get("labels") or {}
    if selector is not None and not selector_matches(selector, labels):
        return False
    if (pv_spec.get("storageClassName") or "") != claim_class(claim):
        return False
    modes = set(pv_spec.get("accessModes") or ())
    return all(mode in modes for mode in spec.get("accessModes") or ())


@dataclass
class DelayedClaims:
    """The unbound delayed claims of a class, smallest request first (the order upstream
    matches them in), each with its candidate volumes, smallest first, and per candidate
    the rows its node affinity admits."""

    claims: list[Object]
    candidates: list[list[Object]]
    masks: list[list[npt.NDArray[np.bool_]]]

    def choose(self, row: int) -> list[Object | None]:
        """findMatchingVolumes on one row: per claim (in ``claims`` order) the smallest
        candidate the row admits and no earlier claim took, or None (to provision)."""
        taken: set[str] = set()
        chosen: list[Object | None] = []
        for candidates, masks in zip(self.candidates, self.masks, strict=True):
            pick = None
            for pv, mask in zip(candidates, masks, strict=True):
                name = pv["metadata"]["name"]
                if mask[row] and name not in taken:
                    pick = pv
                    taken.add(name)
                    break
            chosen.append(pick)
        return chosen


def delayed_claims(nodes: Any, claims: list[Object], storage: StorageObjects) -> DelayedClaims:
    """The candidates of each claim, over a NodeTable's rows."""
    ordered = sorted(
        claims,
        key=lambda c: storage_bytes(((c.get("spec") or {}).get("resources") or {}).get("requests")),
    )
    every = every_row(nodes)
    candidates: list[list[Object]] = []
    masks: list[list[npt.NDArray[np.bool_]]] = []
    assumed = storage.assumed
    for claim in ordered:
        key = claim_key(claim)
        fitting = [
            pv
            for name, pv in storage.objects[VOLUMES].items()
            # (a volume assumed for another claim fits no other: the cheap test first)
            if assumed.get(name, key) == key and volume_fits_claim(claim, pv, assumed.get(name))
        ]
        # Smallest first; equal sizes by name (upstream takes whichever its cache lists first).
        fitting.sort(
            key=lambda pv: (
                storage_bytes((pv.get("spec") or {}).get("capacity")),
                pv["metadata"]["name"],
            )
        )
        prebound = [pv for pv in fitting if bound_to_claim(pv, claim)]
        if prebound:
            fitting = prebound[:1]  # a volume prebound to the claim is its only match
        candidates.append(fitting)
        rows = []
        for pv in fitting:
            required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
            rows.append(every if required is None else nodes.labels_match(required))
        masks.append(rows)
    return DelayedClaims(ordered, candidates, masks)


def provisioning(
    nodes: Any, claim: Object, storage: StorageObjects
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]] | str:
    """checkVolumeProvisions for one claim over a NodeTable's rows: (the rows where its
    class may provision it - a provisioner, allowedTopologies -, the rows with enough
    storage for it - CSIStorageCapacity, when the provisioner's CSIDriver asks for it);
    or the error that ends the attempt (no class, a class that does not exist)."""
    name = claim_class(claim)
    if not name:
        return f'no class for claim "{claim_key(claim)}"'
    storage_class = storage.storage_class(name)
    if storage_class is None:
        return f'failed to find storage class "{name}"'
    every = every_row(nodes)
    provisioner = storage_class.get("provisioner") or ""
    if provisioner in ("", NOT_SUPPORTED_PROVISIONER):
        return np.zeros_like(every), every
    allowed = every
    terms = storage_class.get("allowedTopologies") or ()
    if terms:
        allowed = np.zeros_like(every)
        for term in terms:
            match = every_row(nodes)
            for requirement in term.get("matchLabelExpressions") or ():
                match &= nodes.label_in(
                    requirement.get("key") or "", requirement.get("values") or ()
                )
            allowed |= match
    return allowed, _enough_capacity(nodes, claim, name, provisioner, storage)


def _enough_capacity(
    nodes: Any, claim: Object, class_name: str, provisioner: str, storage: StorageObjects
) -> npt.NDArray[np.bool_]:
    """hasEnoughCapacity per row: a CSIStorageCapacity of the class whose node topology
    selects the node and whose maximumVolumeSize (else capacity) holds the request."""
    every = every_row(nodes)
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    if "storage" not in requests:
        return every
    driver = storage.objects[CSI_DRIVERS].get(provisioner)
    if driver is None or not (driver.get("spec") or {}).get("storageCapacity"):
        return every
    size = storage_bytes(requests)
    enough = np.zeros_like(every)
    for capacity in storage.objects[CAPACITIES].values():
        if capacity.get("storageClassName") != class_name:
            continue
        limit = capacity.get("maximumVolumeSize") or capacity.get("capacity")
        if limit is None or storage_bytes({"storage": limit}) < size:
            continue
        enough |= selector_rows(nodes, capacity.get("nodeTopology"))
    return enough


def selector_rows(nodes: Any, raw: Mapping[str, Any] | None) -> npt.NDArray[np.bool_]:
    """The rows whose labels a LabelSelector selects (none for a missing or invalid one)."""
    every = every_row(nodes)
    if raw is None:
        return np.zeros_like(every)
    selector, error = parse_selector(raw)
    if error is not None or selector is None:
        return np.zeros_like(every)
    rows = every
    for key, op, values in selector:
        if op == "In":
            rows = rows & nodes.label_in(key, values)
        elif op == "NotIn":
            rows = rows & ~nodes.label_in(key, values)
        elif op == "Exists":
            rows = rows & nodes.has_label(key)
        elif op == "DoesNotExist":
            rows = rows & ~nodes.has_label(key)
        else:
            return np.zeros_like(every)
    return rows
