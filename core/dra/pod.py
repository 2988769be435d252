"""DynamicResources for one pod: its PreFilter, its Filter on each node, and what Reserve
keeps, as kube-scheduler v1.34 does them.

PreFilter resolves the pod's claims (a claim not made yet, missing, being deleted, not
the pod's own, or allocated and reserved up to the limit for others rejects the pod on
every node), checks the device classes of the claims still to allocate and sets up the
allocator with the devices already held: those of allocated claims and those that
earlier pods of the burst reserved. Filter then asks, node by node, whether the
allocated claims are usable there and whether the allocator finds devices for the
others; Reserve takes the chosen node's allocation.

Pods without claims never come here. A pod with claims is placed alone (one pod per
placement call), since what it takes changes what the next one can have.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core import _codes
from kubesalvo.core.dra.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    DeviceId,
    claim_key,
)
from kubesalvo.core.dra.nodes import selector_matches
from kubesalvo.core.dra.objects import DraObjects, pod_claim_names
from kubesalvo.core.dra.selectors import SelectorError, Selectors
from kubesalvo.core.plugins import dynamic_resources as plugin

__all__ = ["PodDevices", "Reserved", "claim_change_helps", "left_out", "prefilter"]

Obj = Mapping[str, Any]
# ResourceClaimReservedForMaxSize: the most consumers a claim can be reserved for.
RESERVED_FOR_MAX = 256


# DynamicResources' Filter codes and their texts (core/reasons.py reports them in bursts).
_FAILURE_TEXTS = {
    _codes.DRA_ALLOCATE: plugin.CANNOT_ALLOCATE,
    _codes.DRA_UNAVAILABLE: plugin.NOT_AVAILABLE_ON_NODE,
    _codes.DRA_TIMEOUT: plugin.TIMED_OUT,
}


@dataclass(frozen=True)
class Reserved:
    """What Reserve took for a pod on its node: per claim (namespace/name, uid) the new
    allocation, or None for a claim that was allocated already (only reservedFor
    changes); and the devices the new allocations hold."""

    node: str
    claims: list[tuple[Obj, dict[str, Any] | None]]
    devices: frozenset[DeviceId]


@dataclass
class PodDevices:
    """DynamicResources' cycle state for one pod (see the module docstring)."""

    pod: Obj
    claims: list[Obj] = field(default_factory=list)
    # set when PreFilter rejects the pod on every node, or fails its attempt
    rejection: str = ""
    error: str = ""
    allocator: Allocator | None = None
    to_allocate: list[Obj] = field(default_factory=list)
    # per claim, where its allocation can be used (None: anywhere, or not allocated)
    available_on: list[Obj | None] = field(default_factory=list)
    # per node the Filter passed, the allocation of ``to_allocate`` found there (written
    # out when called: only the chosen node's is)
    allocations: dict[str, Callable[[], list[dict[str, Any]]]] = field(default_factory=dict)
    # the allocator's time limit per node, in seconds (DynamicResourcesArgs; 0: none)
    timeout: float = 0.0

    def filter_rows(
        self, names: Sequence[str | None], rows: npt.NDArray[np.bool_], labels: Callable[[int], Obj]
    ) -> npt.NDArray[np.uint8]:
        """Filter on each of ``rows``: 0 (passes), DRA_ALLOCATE, DRA_UNAVAILABLE or
        DRA_TIMEOUT (the node's search ran past ``timeout``). An allocator error fails the
        attempt (``error``; kube-scheduler's Filter error)."""
        codes = np.zeros(len(rows), dtype=np.uint8)
        needs_labels = self.allocator is not None and self.allocator.needs_labels()
        needs_labels = needs_labels or any(s is not None for s in self.available_on)
        counted = None if self.allocator is None else self.allocator.count_only(self.to_allocate)
        for row in np.flatnonzero(rows).tolist():
            name = names[row]
            if name is None:
                continue
            node_labels: Obj = labels(row) if needs_labels else {}
            unavailable = any(
                s is not None and not selector_matches(s, name, node_labels)
                for s in self.available_on
            )
            if self.allocator is not None and counted is not None:
                began = time.monotonic()
                free = self._count(counted[0], name, node_labels)
                if free is not None:
                    # The search checks its time limit at each step; counting is one step.
                    if self.timeout > 0 and time.monotonic() > began + self.timeout:
                        codes[row] = _codes.DRA_TIMEOUT
                    elif free < counted[1]:
                        codes[row] = _codes.DRA_ALLOCATE
                    elif unavailable:
                        codes[row] = _codes.DRA_UNAVAILABLE
                    else:
                        self.allocations[name] = self._search_later(name, node_labels)
                    continue
            if self.allocator is not None:
                deadline = time.monotonic() + self.timeout if self.timeout > 0 else None
                try:
                    found = self.allocator.search(self.to_allocate, name, node_labels, deadline)
                except AllocationTimeout:
                    codes[row] = _codes.DRA_TIMEOUT
                    continue
                except AllocationError as exc:
                    self.error = f'running "{plugin.NAME}" filter plugin: {exc}'
                    return codes
                if found is None:
                    codes[row] = _codes.DRA_ALLOCATE
                    continue
                if not unavailable:
                    self.allocations[name] = found
            if unavailable:
                codes[row] = _codes.DRA_UNAVAILABLE
        return codes

    def filter_failing(
        self, names: Sequence[str | None], rows: npt.NDArray[np.bool_], labels: Callable[[int], Obj]
    ) -> tuple[tuple[str, npt.NDArray[np.bool_]], ...]:
        """:meth:`filter_rows` as the plugin's node filter answers: per failure text, the
        rows failing with it."""
        codes = self.filter_rows(names, rows, labels)
        return tuple((text, codes == code) for code, text in _FAILURE_TEXTS.items())

    def node_failures(
        self, names: Sequence[str | None], rows: npt.NDArray[np.bool_], labels: Callable[[int], Obj]
    ) -> dict[str, str]:
        """The Filter's failure text on each of ``rows`` that it rejects, by node name (what
        preemption's dry run sees of DynamicResources: upstream's plugin has no AddPod or
        RemovePod, so evicting pods never changes it)."""
        codes = self.filter_rows(names, rows, labels)
        return {
            str(names[row]): _FAILURE_TEXTS[int(codes[row])]
            for row in np.flatnonzero(codes).tolist()
            if names[row] is not None
        }

    def _count(self, class_: Obj, node: str, node_labels: Obj) -> int | None:
        """The node's free devices of the class (``Allocator.free_devices``), or None
        when a selector fails on one of them (the node is then searched)."""
        assert self.allocator is not None
        try:
            return self.allocator.free_devices(class_, node, node_labels)
        except SelectorError:
            return None

    def _search_later(self, node: str, node_labels: Obj) -> Callable[[], list[dict[str, Any]]]:
        """The allocation on a node the count let pass, searched when Reserve wants it
        (nothing it depends on changes in between: the pod is placed alone)."""
        allocator, claims = self.allocator, self.to_allocate
        assert allocator is not None

        def search() -> list[dict[str, Any]]:
            found = allocator.search(claims, node, node_labels)
            if found is None:
                raise AllocationError(f"no allocation on {node}, which had the devices counted")
            return found()

        return search

    def scores(self, names: Sequence[str | None]) -> npt.NDArray[np.int64]:
        """v1.37's Score on each row before normalisation (``plugin.subrequest_score``):
        0 where the Filter found no allocation (upstream scores only the nodes its Filter
        stored one for, which it does only when a claim is still to allocate). Call it
        after ``filter_rows``; cheap when no claim has a firstAvailable request."""
        out = np.zeros(len(names), dtype=np.int64)
        if self.allocator is None or not self.allocations or not self._has_first_available():
            return out
        pending = {id(c) for c in self.to_allocate}
        for row, name in enumerate(names):
            written = None if name is None else self.allocations.get(name)
            if written is None:
                continue
            found = iter(written())
            per_claim = [
                next(found) if id(c) in pending else (c.get("status") or {}).get("allocation")
                for c in self.claims
            ]
            out[row] = plugin.subrequest_score(self.claims, per_claim)
        return out

    def _has_first_available(self) -> bool:
        return any(
            request.get("firstAvailable")
            for claim in self.claims
            for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
        )

    def reserve(self, node: str) -> Reserved:
        """The allocations found on the chosen node, by claim, and the devices they take."""
        written = self.allocations.get(node)
        found = iter(written() if written is not None else ())
        pending = {id(c) for c in self.to_allocate}
        claims: list[tuple[Obj, dict[str, Any] | None]] = []
        devices: set[DeviceId] = set()
        for claim in self.claims:
            allocation = next(found) if id(claim) in pending else None
            claims.append((claim, allocation))
            for result in ((allocation or {}).get("devices") or {}).get("results") or ():
                if not result.get("adminAccess"):
                    devices.add((result["driver"], result["pool"], result["device"]))
        return Reserved(node, claims, frozenset(devices))


def _reserved_for_pod(claim: Obj, uid: str) -> bool:
    reserved = (claim.get("status") or {}).get("reservedFor") or ()
    return any(r.get("uid") == uid for r in reserved)


def prefilter(
    pod: Obj,
    objects: DraObjects,
    selectors: Selectors,
    held: set[DeviceId],
    pending: Set[str],
    timeout: float = 0.0,
) -> PodDevices:
    """DynamicResources' PreFilter for ``pod``. ``held``: devices taken by allocated
    claims and by the reservations of the burst; ``pending``: the uids of claims whose
    allocation a reservation holds but has not written yet; ``timeout``: the Filter's
    time limit per node (DynamicResourcesArgs.filterTimeout, seconds; 0: none)."""
    meta = pod.get("metadata") or {}
    namespace, name, uid = meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", "")
    state = PodDevices(pod, timeout=timeout)
    entries = {e.get("name"): e for e in (pod.get("spec") or {}).get("resourceClaims") or ()}
    for entry_name, claim_name in pod_claim_names(pod):
        if claim_name is None:
            state.rejection = f'pod "{namespace}/{name}": {plugin.CLAIM_NOT_CREATED}'
            return state
        if not claim_name:
            continue  # the controller made none for this entry: nothing to allocate
        claim = objects.claims.get((namespace, claim_name))
        if claim is None:
            state.rejection = plugin.claim_not_found(claim_name)
            return state
        claim_meta = claim.get("metadata") or {}
        if claim_meta.get("deletionTimestamp"):
            state.rejection = plugin.claim_being_deleted(claim_name)
            return state
        if not (entries.get(entry_name) or {}).get("resourceClaimName"):
            owners = claim_meta.get("ownerReferences") or ()
            if not any(o.get("uid") == uid and o.get("controller") for o in owners):
                state.rejection = plugin.claim_not_for_pod(claim_key(claim), namespace, name)
                return state
        state.claims.append(claim)
    if not state.claims:
        return state
    for claim in state.claims:
        allocation = (claim.get("status") or {}).get("allocation")
        reserved = (claim.get("status") or {}).get("reservedFor") or ()
        if (
            allocation is not None
            and len(reserved) >= RESERVED_FOR_MAX
            and not _reserved_for_pod(claim, uid)
        ):
            state.rejection = plugin.CLAIM_IN_USE
            return state
        if allocation is not None:
            state.available_on.append(allocation.get("nodeSelector"))
            continue
        state.available_on.append(None)
        state.to_allocate.append(claim)
        if (claim.get("metadata") or {}).get("uid") in pending:
            state.rejection = plugin.claim_being_allocated(claim_key(claim))
            return state
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
            name = request.get("name", "")
            exactly = request.get("exactly")
            if exactly is not None:
                asked = [(name, exactly)]
            else:  # firstAvailable: each subrequest's class, by "request/subrequest"
                asked = [
                    (f"{name}/{sub.get('name', '')}", sub)
                    for sub in request.get("firstAvailable") or ()
                ]
            class_names = [(n, r.get("deviceClassName") or "") for n, r in asked]
            if not class_names or (exactly is not None and not class_names[0][1]):
                state.error = plugin.prefilter_error(f"request {name}: unsupported request type")
                return state
            for qualified, class_name in class_names:
                if class_name not in objects.classes:
                    state.rejection = plugin.class_missing(qualified, class_name)
                    return state
    if state.to_allocate:
        state.allocator = Allocator(objects, selectors, held)
    return state


def left_out(objects: DraObjects, uid: str) -> DraObjects:
    """The objects as if the pod ``uid`` were not there (what ``explain`` asks of a placed
    pod): its claims no longer reserved for it, and deallocated where it was their only
    consumer, as kube-controller-manager's claim controller deallocates them."""
    claims: dict[tuple[str, str], Obj] = {}
    for key, claim in objects.claims.items():
        status = claim.get("status") or {}
        reserved = status.get("reservedFor") or ()
        if not any(r.get("uid") == uid for r in reserved):
            claims[key] = claim
            continue
        others = [r for r in reserved if r.get("uid") != uid]
        kept = {k: v for k, v in status.items() if k not in ("reservedFor", "allocation")}
        if others:
            kept.update(reservedFor=others, allocation=status.get("allocation"))
        claims[key] = {**claim, "status": kept}
    return DraObjects(objects.classes, claims, objects.pools)


def claim_change_helps(pod: Obj, old: Obj | None, new: Obj | None) -> bool:
    """DynamicResources' queueing hint for a ResourceClaim added or updated (v1.34's
    isSchedulableAfterClaimChange, on API dicts): a claim that got deallocated may free
    devices for anyone; otherwise only a claim of the pod matters, when it was just made
    or its status changed."""
    if new is None:
        return True  # deletions are not registered; answer Queue if asked anyway
    if old is not None:
        was = (old.get("status") or {}).get("allocation")
        if was and not (new.get("status") or {}).get("allocation"):
            return True
    meta = new.get("metadata") or {}
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    mine = {name for _, name in pod_claim_names(pod) if name}
    if meta.get("namespace") != namespace or meta.get("name") not in mine:
        return False
    return old is None or (old.get("status") or {}) != (new.get("status") or {})
