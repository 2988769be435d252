"""The DRA objects of the cluster at one moment, as plain API-shaped dicts, indexed the way
DynamicResources looks them up: DeviceClasses by name, ResourceClaims by namespace and
name, ResourceSlices by driver and pool (a pool may span slices; only its newest
generation counts, as upstream's allocator keeps it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DraObjects", "Pool", "pod_claim_names"]

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Pool:
    """One resource pool: its slices of the newest generation, and whether every slice
    of that generation is there (``resourceSliceCount``); an incomplete pool's devices
    are not allocated, as upstream's allocator refuses them."""

    driver: str
    name: str
    generation: int
    slices: tuple[Obj, ...]
    complete: bool


@dataclass(frozen=True)
class DraObjects:
    classes: Mapping[str, Obj] = field(default_factory=dict)
    claims: Mapping[tuple[str, str], Obj] = field(default_factory=dict)
    pools: Mapping[tuple[str, str], Pool] = field(default_factory=dict)

    @classmethod
    def of(cls, classes: Sequence[Obj], claims: Sequence[Obj], slices: Sequence[Obj]) -> DraObjects:
        by_pool: dict[tuple[str, str], list[Obj]] = {}
        for s in slices:
            spec = s.get("spec") or {}
            pool = spec.get("pool") or {}
            by_pool.setdefault((spec.get("driver", ""), pool.get("name", "")), []).append(s)
        pools: dict[tuple[str, str], Pool] = {}
        for (driver, name), members in by_pool.items():
            newest = max(int(_pool(m).get("generation") or 0) for m in members)
            current = tuple(m for m in members if int(_pool(m).get("generation") or 0) == newest)
            expected = int(_pool(current[0]).get("resourceSliceCount") or 0)
            pools[(driver, name)] = Pool(driver, name, newest, current, len(current) == expected)
        return cls(
            classes={_meta(c).get("name", ""): c for c in classes},
            claims={(_meta(c).get("namespace", ""), _meta(c).get("name", "")): c for c in claims},
            pools=pools,
        )


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def _pool(slice_: Obj) -> Mapping[str, Any]:
    pool: Mapping[str, Any] = (slice_.get("spec") or {}).get("pool") or {}
    return pool


def pod_claim_names(pod: Obj) -> list[tuple[str, str | None]]:
    """Each of the pod's ``spec.resourceClaims`` entries: its name and the ResourceClaim
    it refers to - ``resourceClaimName``, or for a template the name the resourceclaim
    controller recorded in ``status.resourceClaimStatuses``: None while it has recorded
    nothing (the claim is not made yet), "" when it recorded that it made none."""
    generated = {
        s.get("name"): s.get("resourceClaimName") or ""
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()
    }
    out: list[tuple[str, str | None]] = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
        name = entry.get("name", "")
        if entry.get("resourceClaimName"):
            out.append((name, entry["resourceClaimName"]))
        else:
            out.append((name, generated.get(name)))
    return out
