"""Free local volumes counted per node: many claiming pods in one segment of a burst.

A pod with an unbound WaitForFirstConsumer claim takes a volume, so a burst of such pods
is cut after each of them (``core/volume_burst.py``). When the claims of consecutive pods
are alike (the same class, request, volume mode, access modes and selector) and their
class provisions nothing, every one of them fits the same volumes; when each of those
volumes admits one node (a local volume's node affinity), which volume a pod takes on
its node changes nothing for the others. What the next pod can use is then a count per
node: the free volumes there. Such a run of pods is placed as one segment, with that
count as a resource column the pods each request one of (the kernel's fit does the
rest), and Reserve gives each placed pod, in order, the smallest free volume on its node,
as VolumeBinding's ``findMatchingVolumes`` would have.

With StorageCapacityScoring on, each pod of such a run scores a node by the volume it
would take there: the run stays counted only when each node's free volumes have one size
(:func:`capacity_scores`, the score every pod of the run gets per node).

A pod that is not alike (a claim of its own kind, two delayed claims, a selected node, a
prebound volume, a provisioner, ReadWriteOncePod, a limited CSI driver, a gang) keeps
the segment of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core import in_tree_disks, volume_capacity, volumes
from kubesalvo.core.plugins import node_volume_limits
from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.plugins.framework import NodeTable

COLUMN = volumes.FREE_LOCAL_VOLUMES

Object = Mapping[str, Any]
Signature = tuple[str, int, str, tuple[str, ...], str]
# A volume's node-affinity rows (None: not exactly one node), kept for one burst.
RowCache = dict[str, tuple[Object, int | None]]


def countable_claim(
    pod: Object, storage: volumes.StorageObjects, limited: set[str]
) -> tuple[Object, Signature] | None:
    """The pod's one unbound delayed claim and its signature, when its free volumes can
    be counted per node; None when the pod needs a segment of its own."""
    if gang.group_of(pod) is not None:
        return None
    spec = pod.get("spec") or {}
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    found = None
    for volume in spec.get("volumes") or ():
        if volume.get("ephemeral") is not None:
            return None
        if any(source in volume for source in in_tree_disks.SOURCES):
            return None  # its disk may conflict with an earlier pod of the run
        source = volume.get("persistentVolumeClaim")
        if source is None:
            continue
        claim = storage.claim(namespace, source.get("claimName") or "")
        if claim is None:
            return None
        claim_spec = claim.get("spec") or {}
        if volumes.READ_WRITE_ONCE_POD in (claim_spec.get("accessModes") or ()):
            return None
        if limited and node_volume_limits.claim_volume_id(claim, storage)[0] in limited:
            return None
        if volumes.is_fully_bound(claim):
            continue
        if found is not None or claim_spec.get("volumeName"):
            return None
        annotations = (claim.get("metadata") or {}).get("annotations") or {}
        if volumes.ANN_SELECTED_NODE in annotations:
            return None
        try:
            if not volumes.delays_binding(claim, storage):
                return None
        except volumes.BindingModeUnset:
            return None
        found = claim
    if found is None:
        return None
    name = volumes.claim_class(found)
    storage_class = storage.storage_class(name)
    if storage_class is None:
        return None
    if (storage_class.get("provisioner") or "") not in ("", volumes.NOT_SUPPORTED_PROVISIONER):
        return None
    claim_spec = found.get("spec") or {}
    signature = (
        name,
        volumes.storage_bytes((claim_spec.get("resources") or {}).get("requests")),
        claim_spec.get("volumeMode") or volumes.FILESYSTEM,
        tuple(sorted(claim_spec.get("accessModes") or ())),
        json.dumps(claim_spec.get("selector"), sort_keys=True),
    )
    return found, signature


def _row(nodes: NodeTable, pv: Object, cache: RowCache) -> int | None:
    name = pv["metadata"]["name"]
    cached = cache.get(name)
    if cached is not None and cached[0] is pv:
        return cached[1]
    required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    row: int | None = None
    if required is not None:
        rows = np.flatnonzero(nodes.labels_match(required))
        row = int(rows[0]) if len(rows) == 1 else (-1 if len(rows) == 0 else None)
    cache[name] = (pv, row)
    return row


def free_volumes(
    nodes: NodeTable,
    claims: Sequence[Object],
    storage: volumes.StorageObjects,
    cache: RowCache,
) -> dict[int, list[Object]] | None:
    """Per row, the free volumes every one of ``claims`` (alike) fits, smallest first (by
    capacity, then name, as ``volumes.delayed_claims`` orders them); None when a fitting
    volume admits more than one node or one of the claims has a volume prebound to it."""
    keys = {volumes.claim_key(c) for c in claims}
    first = claims[0]
    per_row: dict[int, list[Object]] = {}
    for pv in storage.objects[volumes.VOLUMES].values():
        ref = (pv.get("spec") or {}).get("claimRef")
        if ref and f"{ref.get('namespace') or 'default'}/{ref.get('name')}" in keys:
            return None  # prebound or bound to one of them: its only match
        name = pv["metadata"]["name"]
        if not volumes.volume_fits_claim(first, pv, storage.assumed.get(name)):
            continue
        row = _row(nodes, pv, cache)
        if row is None:
            return None
        if row >= 0:
            per_row.setdefault(row, []).append(pv)
    for listed in per_row.values():
        listed.sort(
            key=lambda pv: (
                volumes.storage_bytes((pv.get("spec") or {}).get("capacity")),
                pv["metadata"]["name"],
            )
        )
    return per_row


def with_request(pod: Object) -> dict[str, Any]:
    """A copy of the pod asking for one free volume of the column (as pod overhead, which
    the fit adds to its containers' requests); the rest is shared with the original."""
    spec = dict(pod.get("spec") or {})
    spec["overhead"] = {**(spec.get("overhead") or {}), COLUMN: "1"}
    return {**pod, "spec": spec}


def capacity_scores(
    shape: Sequence[Any], claim: Object, free: dict[int, list[Object]], rows: int
) -> npt.NDArray[np.int64] | None:
    """VolumeBinding's capacity score per row for each pod of a counted run of ``claim``'s
    alike claims: a pod takes the smallest free volume on its node, so when every free
    volume of a node has the same capacity each pod of the run scores the node alike,
    and the run stays countable; None when some node's free volumes differ in size (a
    later pod there would score otherwise: the run goes pod by pod)."""
    out = np.zeros(rows, dtype=np.int64)
    for row, listed in free.items():
        sizes = {volumes.storage_bytes((pv.get("spec") or {}).get("capacity")) for pv in listed}
        if len(sizes) > 1:
            return None
        if listed:
            out[row] = volume_capacity.class_score(
                shape, volume_capacity.static_usage([claim], [listed[0]])
            )
    return out
