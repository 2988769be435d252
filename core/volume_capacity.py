"""VolumeBinding's Score with StorageCapacityScoring on: how full the storage a pod's unbound
WaitForFirstConsumer claims would use on a node is.

kube-scheduler's semantics (v1.37's, where the gate is beta and on; alpha and off in
v1.34, where kubesalvo scores 0 unless ``--feature-gates StorageCapacityScoring=true``):

* per node, the claims Filter matched to static volumes there (each the smallest free
  volume that fits, ``core/volumes.DelayedClaims.choose``) count, grouped by the
  volume's class: requested = the claims' requests summed, capacity = the chosen
  volumes' capacities summed;
* only when no claim was matched to a static volume on the node, the claims to provision
  count, grouped by the claim's class, those whose capacity was checked only (a request,
  a CSIDriver with ``storageCapacity``): requested summed, capacity = the
  CSIStorageCapacity's ``capacity`` that admitted the last of them (not summed: two
  claims of a class share the pool);
* each class scores shape(utilization), utilization = requested x 100 / capacity in
  integer division (100 when the capacity is 0 or smaller than the request); the shape
  is the args' broken line (scores 0..10 scaled by 10, integer interpolation truncated
  towards zero as Go does); the node's score is the mean over the classes, rounded half
  away from zero; a node without such claims scores 0;
* no NormalizeScore: the score is final, and the profile's weight multiplies it.

Where several CSIStorageCapacity objects admit a claim on a node, upstream takes the
first its informer lists (an order it does not define); kubesalvo takes the first in
its store's order. A CSIStorageCapacity with only ``maximumVolumeSize`` counts a
capacity of 0 here (upstream dereferences the missing capacity).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from kubesalvo.core import volumes

__all__ = [
    "MAX_UTILIZATION",
    "class_score",
    "provision_capacity",
    "scores",
    "shape_score",
    "static_usage",
    "utilization",
]

MAX_UTILIZATION = 100
# Shape scores are given on 0..10 (upstream config.MaxCustomPriorityScore), scaled to 0..100.
_SCALE = 10  # framework.MAX_NODE_SCORE // 10 (this module is below the plugins)


class ShapePoint(Protocol):
    """A point of the shape (``node_resources_fit.ShapePoint``, upstream's
    UtilizationShapePoint, which RequestedToCapacityRatio shares)."""

    @property
    def utilization(self) -> int: ...

    @property
    def score(self) -> int: ...


_INT64 = 1 << 64


def _wrap(value: int) -> int:
    """``value`` as Go's int64 arithmetic leaves it (two's complement overflow)."""
    return (value + (1 << 63)) % _INT64 - (1 << 63)


def _go_div(a: int, b: int) -> int:
    """Go's integer division: truncated towards zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def shape_score(shape: Sequence[ShapePoint], p: int) -> int:
    """The broken line through ``shape`` (scores scaled to 0..100) at utilization ``p``."""
    for i, point in enumerate(shape):
        if p <= point.utilization:
            if i == 0:
                return point.score * _SCALE
            low = shape[i - 1]
            rise = (point.score - low.score) * _SCALE * (p - low.utilization)
            return low.score * _SCALE + _go_div(rise, point.utilization - low.utilization)
    return shape[-1].score * _SCALE


def utilization(requested: int, capacity: int) -> int:
    """requested x 100 / capacity as upstream computes it (int64), or 100 when the
    capacity is 0 or below the request."""
    if capacity == 0 or requested > capacity:
        return MAX_UTILIZATION
    return _go_div(_wrap(requested * MAX_UTILIZATION), capacity)


def class_score(shape: Sequence[ShapePoint], per_class: dict[str, tuple[int, int]]) -> int:
    """A node's score from (requested, capacity) per class: the rounded mean."""
    if not per_class:
        return 0
    total = sum(shape_score(shape, utilization(r, c)) for r, c in per_class.values())
    return (2 * total + len(per_class)) // (2 * len(per_class))


def provision_capacity(
    nodes: Any, claim: volumes.Object, storage: volumes.StorageObjects
) -> npt.NDArray[np.int64] | None:
    """Per row, the capacity (bytes) of the CSIStorageCapacity that admits provisioning
    ``claim`` there (-1: none does); None when its capacity is not checked (no request, a
    provisioner whose CSIDriver does not ask for it), so that it does not score."""
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    if "storage" not in requests:
        return None
    class_name = volumes.claim_class(claim)
    storage_class = storage.storage_class(class_name) or {}
    driver = storage.objects[volumes.CSI_DRIVERS].get(storage_class.get("provisioner") or "")
    if driver is None or not (driver.get("spec") or {}).get("storageCapacity"):
        return None
    size = volumes.storage_bytes(requests)
    out = np.full(len(volumes.every_row(nodes)), -1, dtype=np.int64)
    for capacity in storage.objects[volumes.CAPACITIES].values():
        if capacity.get("storageClassName") != class_name:
            continue
        limit = capacity.get("maximumVolumeSize") or capacity.get("capacity")
        if limit is None or volumes.storage_bytes({"storage": limit}) < size:
            continue
        rows = volumes.selector_rows(nodes, capacity.get("nodeTopology")) & (out < 0)
        amount = capacity.get("capacity")
        out[rows] = 0 if amount is None else volumes.storage_bytes({"storage": amount})
    return out


def _request(claim: volumes.Object) -> int:
    return volumes.storage_bytes(((claim.get("spec") or {}).get("resources") or {}).get("requests"))


def static_usage(
    claims: Sequence[volumes.Object], chosen: Sequence[volumes.Object | None]
) -> dict[str, tuple[int, int]]:
    """(requested, capacity) per class of the volumes chosen, summed."""
    out: dict[str, tuple[int, int]] = {}
    for claim, pv in zip(claims, chosen, strict=True):
        if pv is None:
            continue
        name = (pv.get("spec") or {}).get("storageClassName") or ""
        requested, capacity = out.get(name, (0, 0))
        pv_bytes = volumes.storage_bytes((pv.get("spec") or {}).get("capacity"))
        out[name] = (requested + _request(claim), capacity + pv_bytes)
    return out


def _provisioned(
    claims: Sequence[tuple[volumes.Object, npt.NDArray[np.int64] | None]], row: int
) -> dict[str, tuple[int, int]]:
    """(requested summed, the last claim's pool capacity) per class of the claims to
    provision on ``row`` whose capacity is checked."""
    out: dict[str, tuple[int, int]] = {}
    for claim, capacity in claims:
        if capacity is None:
            continue
        name = volumes.claim_class(claim)
        requested = out.get(name, (0, 0))[0]
        out[name] = (requested + _request(claim), int(capacity[row]))
    return out


def scores(
    shape: Sequence[ShapePoint],
    nodes: Any,
    selected: Sequence[volumes.Object],
    found: volumes.DelayedClaims | None,
    storage: volumes.StorageObjects,
    rows: npt.NDArray[np.bool_],
) -> npt.NDArray[np.int64]:
    """The score of each row of ``rows`` (those where the unbound claims fit), 0 on the
    others: ``selected`` are the claims that name a selected node (provisioned there),
    ``found`` the others with their candidate volumes."""
    out = np.zeros(len(rows), dtype=np.int64)
    claims = list(found.claims) if found is not None else []
    capacity = {
        volumes.claim_key(c): provision_capacity(nodes, c, storage) for c in (*selected, *claims)
    }
    fixed = [(c, capacity[volumes.claim_key(c)]) for c in selected]
    memo: dict[tuple, int] = {}
    if found is not None and len(claims) == 1:
        # One claim: per row the smallest candidate its node affinity admits, in bulk.
        pick = np.full(len(rows), -1, dtype=np.int64)
        if found.masks[0]:
            stacked = np.vstack(found.masks[0])  # candidates x rows, smallest first
            pick = np.where(stacked.any(axis=0), stacked.argmax(axis=0), -1)
        for j in np.unique(pick[rows]).tolist():
            at = rows & (pick == j)
            if j >= 0:
                out[at] = class_score(shape, static_usage(claims, [found.candidates[0][j]]))
                continue
            for row in np.flatnonzero(at).tolist():
                per_class = _provisioned(
                    [*fixed, (claims[0], capacity[volumes.claim_key(claims[0])])], row
                )
                key = tuple(sorted(per_class.items()))
                if key not in memo:
                    memo[key] = class_score(shape, per_class)
                out[row] = memo[key]
        return out
    for row in np.flatnonzero(rows).tolist():
        chosen = found.choose(row) if found is not None else []
        per_class = static_usage(claims, chosen)
        if not per_class:
            left = [
                (c, capacity[volumes.claim_key(c)])
                for c, pv in zip(claims, chosen, strict=True)
                if pv is None
            ]
            per_class = _provisioned([*fixed, *left], row)
        key = tuple(sorted(per_class.items()))
        if key not in memo:
            memo[key] = class_score(shape, per_class)
        out[row] = memo[key]
    return out
