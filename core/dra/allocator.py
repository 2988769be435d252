"""The structured-parameters allocator: devices for a pod's unallocated claims on one node.

As kube-scheduler's (k8s.io/dynamic-resource-allocation/structured, v1.34 with its
default features): the claims are taken in order, each claim's requests in order, and
each device a request needs is searched among the pools reachable from the node - pools
then slices then devices, in the order they were published - skipping devices already
allocated (claims' status.allocation, and what earlier pods of the burst hold), devices
that fail the class's or the request's CEL selectors, and those that would break a
``matchAttribute`` constraint; on a dead end it backtracks. The first full solution is
taken. ``allocationMode: All`` takes every matching device of the node's pools and fails
on an incomplete pool. Claim and class errors (an unknown constraint, a CEL error) raise
:class:`AllocationError` with upstream's wording: the pod's attempt ends with an error.

Not modelled, each a feature that is off by default in v1.34: partitionable devices
(devices consuming counters are never allocated), device taints, binding conditions
(devices with them are never allocated), consumable capacity.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core.dra.nodes import allocation_node_selector, slice_targets
from kubesalvo.core.dra.objects import DraObjects, Pool
from kubesalvo.core.dra.selectors import SelectorError, Selectors

__all__ = [
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "DeviceId",
    "allocated_devices",
    "claim_key",
]

DeviceId = tuple[str, str, str]  # driver, pool, device
Obj = Mapping[str, Any]
# AllocationResultsMaxSize: the most devices one claim's allocation may hold.
MAX_RESULTS = 32
_ALL = "All"
_EXACT = "ExactCount"


class AllocationError(Exception):
    """The claims cannot be allocated anywhere as they stand (a claim or class error)."""


class AllocationTimeout(Exception):
    """The search on one node ran past its deadline (DynamicResourcesArgs.filterTimeout)."""


def claim_key(claim: Obj) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def allocated_devices(claims: Iterable[Obj]) -> set[DeviceId]:
    """The devices the claims' allocations hold (admin access holds none)."""
    held: set[DeviceId] = set()
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or ():
            if not result.get("adminAccess"):
                held.add(
                    (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
                )
    return held


@dataclass
class _Candidate:
    id: DeviceId
    device: Obj
    slice_spec: Obj


@dataclass
class _Request:
    """A request, or one subrequest of a firstAvailable request (``parent`` its name);
    ``exactly`` holds the fields both share (class, selectors, mode, count, adminAccess)."""

    name: str
    exactly: Obj
    class_: Obj
    count: int
    all_devices: list[_Candidate] = field(default_factory=list)
    parent: str = ""

    @property
    def admin(self) -> bool:
        return bool(self.exactly.get("adminAccess"))

    @property
    def base(self) -> str:
        """The claim's request this is (or is a subrequest of)."""
        return self.parent or self.name

    @property
    def full(self) -> str:
        """The name an allocation result gives: "request" or "request/subrequest"."""
        return f"{self.parent}/{self.name}" if self.parent else self.name


@dataclass
class _MatchAttribute:
    requests: frozenset[str]
    attribute: str
    value: Any = None
    devices: int = 0

    def applies(self, request: _Request) -> bool:
        # A constraint naming a request covers each of its subrequests; one naming
        # "request/subrequest" covers that subrequest only.
        return not self.requests or request.base in self.requests or request.full in self.requests

    def add(self, request: _Request, candidate: _Candidate) -> bool:
        if not self.applies(request):
            return True
        value = _attribute(candidate, self.attribute)
        if value is None:
            return False
        if self.devices and value != self.value:
            return False
        if not self.devices:
            self.value = value
        self.devices += 1
        return True

    def remove(self, request: _Request) -> None:
        if self.applies(request):
            self.devices -= 1


def _attribute(candidate: _Candidate, qualified: str) -> tuple[str, Any] | None:
    """A device's attribute by fully qualified name (the driver's own attributes may be
    published without their domain), as (kind, value) so 1 and "1" differ."""
    attributes = candidate.device.get("attributes") or {}
    value = attributes.get(qualified)
    if value is None:
        domain, _, name = qualified.partition("/")
        if domain != candidate.id[0]:
            return None
        value = attributes.get(name)
    if value is None:
        return None
    for kind in ("string", "int", "bool", "version"):
        if kind in value:
            return kind, value[kind]
    return None


class Allocator:
    """Allocation against one snapshot of slices, classes and held devices.

    ``held``: devices no new allocation may take (allocated claims, and the devices that
    earlier pods of the burst reserved). One instance serves every node a pod is tried
    on; matches of a device against a request are remembered across nodes.
    """

    def __init__(self, objects: DraObjects, selectors: Selectors, held: set[DeviceId]) -> None:
        self.objects = objects
        self.selectors = selectors
        self.held = held
        self._matches: dict[tuple[Any, ...], bool] = {}

    def _index(self) -> None:
        # Slices by the node they are local to; the others (allNodes, nodeSelector) are
        # checked against each node. Per-device node selection (partitionable devices,
        # off by default in v1.34) is not modelled: such slices serve no node.
        self._local: dict[str, list[tuple[Pool, Obj]]] = {}
        self._shared: list[tuple[Pool, Obj]] = []
        for pool in self.objects.pools.values():
            for slice_ in pool.slices:
                spec = slice_.get("spec") or {}
                if spec.get("perDeviceNodeSelection"):
                    continue
                if spec.get("nodeName"):
                    self._local.setdefault(spec["nodeName"], []).append((pool, slice_))
                else:
                    self._shared.append((pool, slice_))

    def needs_labels(self) -> bool:
        """Whether some slice selects nodes by label (else ``labels`` may be empty)."""
        if not hasattr(self, "_shared"):
            self._index()
        return any((s.get("spec") or {}).get("nodeSelector") for _, s in self._shared)

    def pools_for(self, node: str, labels: Mapping[str, str]) -> list[tuple[Pool, list[Obj]]]:
        """Each pool with the slices of its newest generation reachable from the node, in
        the order the pools were published."""
        if not hasattr(self, "_shared"):
            self._index()
        by_pool: dict[tuple[str, str], tuple[Pool, list[Obj]]] = {}
        for pool, slice_ in self._local.get(node, ()):
            by_pool.setdefault((pool.driver, pool.name), (pool, []))[1].append(slice_)
        for pool, slice_ in self._shared:
            if slice_targets(slice_.get("spec") or {}, node, labels):
                by_pool.setdefault((pool.driver, pool.name), (pool, []))[1].append(slice_)
        return list(by_pool.values())

    def allocate(
        self,
        claims: Sequence[Obj],
        node: str,
        labels: Mapping[str, str],
        deadline: float | None = None,
    ) -> list[dict[str, Any]] | None:
        """One allocation result per claim (API shape), or None when the node cannot
        hold them all; AllocationError when the claims cannot be allocated anywhere,
        AllocationTimeout when ``time.monotonic()`` passes ``deadline`` first."""
        found = self.search(claims, node, labels, deadline)
        return None if found is None else found()

    def search(
        self,
        claims: Sequence[Obj],
        node: str,
        labels: Mapping[str, str],
        deadline: float | None = None,
    ) -> Callable[[], list[dict[str, Any]]] | None:
        """``allocate``, with the results written out only when called: Filter finds an
        allocation on every feasible node, Reserve wants one node's."""
        pools = self.pools_for(node, labels)
        plan = _Search(self, claims, pools, deadline)
        if not plan.solve():
            return None
        return plan.results

    def count_only(self, claims: Sequence[Obj]) -> tuple[Obj, int] | None:
        """The device class and the number of devices, when ``claims`` are one claim whose
        requests all ask a count (ExactCount) of that one class with no selectors of their
        own, no adminAccess and no constraints; else None. For such a claim the search
        succeeds on a node exactly when the node has that many free devices the class
        selects (any device serves any request, nothing ties two devices), so Filter may
        count them instead of searching (``free_devices``)."""
        if len(claims) != 1:
            return None
        devices = (claims[0].get("spec") or {}).get("devices") or {}
        if devices.get("constraints"):
            return None
        class_name, total = None, 0
        for raw in devices.get("requests") or ():
            exactly = raw.get("exactly")
            if exactly is None or exactly.get("selectors") or exactly.get("adminAccess"):
                return None
            if (exactly.get("allocationMode") or _EXACT) != _EXACT:
                return None
            name = exactly.get("deviceClassName") or ""
            if not name or class_name not in (None, name):
                return None
            class_name = name
            total += int(exactly.get("count") or 1)
        class_ = self.objects.classes.get(class_name or "")
        if class_ is None or total > MAX_RESULTS:
            return None  # the search reports these as it does
        return class_, total

    def free_devices(self, class_: Obj, node: str, labels: Mapping[str, str]) -> int:
        """How many devices of complete pools reachable from the node the class's
        selectors select and nothing holds (as the search would find them free).
        SelectorError when a selector fails on one: the caller searches instead, which
        meets the failure only if it reaches that device."""
        expressions = tuple(
            (s.get("cel") or {}).get("expression")
            for s in (class_.get("spec") or {}).get("selectors") or ()
        )
        if any(e is None for e in expressions):
            raise SelectorError("a class selector without a CEL expression")
        free: set[DeviceId] = set()
        held = self.held
        for pool, slices in self.pools_for(node, labels):
            if not pool.complete:
                continue
            for slice_ in slices:
                for name in self.selectors.selected_devices(
                    expressions,  # type: ignore[arg-type]  # None refused above
                    pool.driver,
                    pool.name,
                    slice_,
                ):
                    device_id = (pool.driver, pool.name, name)
                    if device_id not in held:
                        free.add(device_id)
        return len(free)

    def selectable(
        self, key: tuple[int, ...], request: _Request, candidate: _Candidate, claim: Obj
    ) -> bool:
        """The class's selectors, then the request's (errors as kube-scheduler words them)."""
        cache_key = (candidate.id, request.name, *key)
        known = self._matches.get(cache_key)
        if known is not None:
            return known
        device = candidate.device
        if device.get("bindingConditions") or device.get("consumesCounters"):
            self._matches[cache_key] = False
            return False
        driver, pool, name = candidate.id
        where = f"{driver}/{pool}/{name}"
        class_name = (request.class_.get("metadata") or {}).get("name", "")
        for i, selector in enumerate((request.class_.get("spec") or {}).get("selectors") or ()):
            if not self._match(selector, driver, device, f"class {class_name}", i, where):
                self._matches[cache_key] = False
                return False
        for i, selector in enumerate(request.exactly.get("selectors") or ()):
            if not self._match(selector, driver, device, f"claim {claim_key(claim)}", i, where):
                self._matches[cache_key] = False
                return False
        self._matches[cache_key] = True
        return True

    def _match(
        self, selector: Obj, driver: str, device: Obj, owner: str, i: int, where: str
    ) -> bool:
        expression = (selector.get("cel") or {}).get("expression")
        if expression is None:
            raise AllocationError(
                f"{owner}, selector #{i}: CEL expression empty (unsupported selector type?)"
            )
        error = self.selectors.compile_error(expression)
        if error is not None:
            raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {error}")
        try:
            return self.selectors.device_matches(expression, driver, device)
        except SelectorError as exc:
            raise AllocationError(
                f"{owner}: selector #{i} on device {where}: CEL runtime error: {exc}"
            ) from exc


class _Search:
    """One allocation attempt on one node (the recursion of upstream's allocateOne)."""

    def __init__(
        self,
        alloc: Allocator,
        claims: Sequence[Obj],
        pools: list[tuple[Pool, list[Obj]]],
        deadline: float | None = None,
    ) -> None:
        self.alloc = alloc
        self.deadline = deadline
        self.claims = claims
        self.pools = pools
        # Per claim, per request its alternatives: the request itself, or the
        # subrequests of a firstAvailable request in order (tried in that order).
        self.requests: list[list[list[_Request]]] = []
        # Per claim, per request the alternative in use (the one a solution took).
        self.picked: list[list[int]] = []
        self.constraints: list[list[_MatchAttribute]] = []
        self.taken: dict[DeviceId, set[int]] = {}
        self.chosen: list[list[tuple[str, _Candidate, bool]]] = [[] for _ in claims]
        for ci, claim in enumerate(claims):
            devices = (claim.get("spec") or {}).get("devices") or {}
            requests: list[list[_Request]] = []
            total = 0
            for ri, raw in enumerate(devices.get("requests") or ()):
                name = raw.get("name", "")
                exactly = raw.get("exactly")
                if exactly is not None:
                    alternatives = [self._request(ci, (ri, 0), claim, name, exactly, "")]
                else:
                    alternatives = [
                        self._request(ci, (ri, si), claim, sub.get("name", ""), sub, name)
                        for si, sub in enumerate(raw.get("firstAvailable") or ())
                    ]
                    if not alternatives:
                        raise AllocationError(
                            f"claim {claim_key(claim)}, request {name}: missing device class "
                            "name (unsupported request type?)"
                        )
                # The fewest devices the request can take (upstream's lower bound).
                total += min(r.count for r in alternatives)
                requests.append(alternatives)
            if total > MAX_RESULTS:
                raise AllocationError(
                    f"claim {claim_key(claim)}: number of requested devices {total} exceeds "
                    f"the claim limit of {MAX_RESULTS}"
                )
            constraints: list[_MatchAttribute] = []
            for i, raw in enumerate(devices.get("constraints") or ()):
                attribute = raw.get("matchAttribute")
                if not attribute:
                    raise AllocationError(
                        f"claim {claim_key(claim)}, constraint #{i}: empty constraint "
                        "(unsupported constraint type?)"
                    )
                constraints.append(_MatchAttribute(frozenset(raw.get("requests") or ()), attribute))
            self.requests.append(requests)
            self.picked.append([0] * len(requests))
            self.constraints.append(constraints)

    def _request(
        self, ci: int, key: tuple[int, int], claim: Obj, name: str, exactly: Obj, parent: str
    ) -> _Request:
        """A request or subrequest checked as upstream's validateDeviceRequest checks it."""
        class_name = exactly.get("deviceClassName") or ""
        if not class_name:
            raise AllocationError(
                f"claim {claim_key(claim)}, request {name}: missing device class name "
                "(unsupported request type?)"
            )
        class_ = self.alloc.objects.classes.get(class_name)
        if class_ is None:
            raise AllocationError(
                f"claim {claim_key(claim)}, request {name}: could not retrieve device "
                f'class {class_name}: deviceclass.resource.k8s.io "{class_name}" not found'
            )
        for i, selector in enumerate(exactly.get("selectors") or ()):
            if (selector.get("cel") or {}).get("expression") is None:
                raise AllocationError(
                    f"claim {claim_key(claim)}, request {name}, selector #{i}: CEL "
                    "expression empty (unsupported selector type?)"
                )
        mode = exactly.get("allocationMode") or _EXACT
        request = _Request(name, exactly, class_, 0, parent=parent)
        if mode == _EXACT:
            request.count = int(exactly.get("count") or 1)
        elif mode == _ALL:
            request.all_devices = self._all_devices(ci, key, request, claim)
            request.count = len(request.all_devices)
        else:
            raise AllocationError(
                f"claim {claim_key(claim)}, request {name}: unsupported count mode {mode}"
            )
        return request

    def _candidates(self) -> Iterable[_Candidate]:
        for pool, slices in self.pools:
            if not pool.complete:
                continue
            for slice_ in slices:
                spec = slice_.get("spec") or {}
                for device in spec.get("devices") or ():
                    yield _Candidate((pool.driver, pool.name, device.get("name", "")), device, spec)

    def _all_devices(
        self, ci: int, key: tuple[int, int], request: _Request, claim: Obj
    ) -> list[_Candidate]:
        found: list[_Candidate] = []
        for pool, slices in self.pools:
            if not pool.complete:
                raise AllocationError(
                    f"claim {claim_key(claim)}, request {request.name}: asks for all devices, "
                    f"but resource pool {pool.driver}/{pool.name} is currently being updated"
                )
            for slice_ in slices:
                spec = slice_.get("spec") or {}
                for device in spec.get("devices") or ():
                    candidate = _Candidate(
                        (pool.driver, pool.name, device.get("name", "")), device, spec
                    )
                    if self.alloc.selectable((ci, *key), request, candidate, claim):
                        found.append(candidate)
        return found

    def _in_use(self, device: DeviceId, ci: int, admin: bool) -> bool:
        if admin:
            return ci in self.taken.get(device, ())
        return device in self.alloc.held or bool(self.taken.get(device))

    def _take(self, ci: int, request: _Request, candidate: _Candidate, must: bool) -> bool:
        if self._in_use(candidate.id, ci, request.admin):
            return False
        added: list[_MatchAttribute] = []
        for constraint in self.constraints[ci]:
            if not constraint.add(request, candidate):
                for done in added:
                    done.remove(request)
                if must:
                    raise AllocationError(
                        f"claim {claim_key(self.claims[ci])}, request {request.name}: cannot add "
                        f"device {'/'.join(candidate.id)} because a claim constraint would not "
                        "be satisfied"
                    )
                return False
            added.append(constraint)
        self.taken.setdefault(candidate.id, set()).add(ci)
        self.chosen[ci].append((request.full, candidate, request.admin))
        return True

    def _release(self, ci: int, request: _Request, candidate: _Candidate) -> None:
        for constraint in self.constraints[ci]:
            constraint.remove(request)
        self.taken[candidate.id].discard(ci)
        self.chosen[ci].pop()

    def solve(self) -> bool:
        return self._one(0, 0)

    def _one(self, ci: int, ri: int) -> bool:
        """Request ``ri`` of claim ``ci`` and all after it: each alternative in order (a
        firstAvailable request's subrequests), the first that leads to a solution kept."""
        # As upstream's allocateOne checks its context at every step.
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeout
        if ci >= len(self.claims):
            return True
        if ri >= len(self.requests[ci]):
            return self._one(ci + 1, 0)
        for si, request in enumerate(self.requests[ci][ri]):
            self.picked[ci][ri] = si
            if self._device(ci, ri, si, request, 0):
                return True
        return False

    def _device(self, ci: int, ri: int, si: int, request: _Request, di: int) -> bool:
        """Device ``di`` of the request (one alternative), then the rest."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeout
        if request.all_devices or request.exactly.get("allocationMode") == _ALL:
            if not request.all_devices:
                return False  # All needs at least one device
            if di >= request.count:
                return self._one(ci, ri + 1)
            if len(self.chosen[ci]) + request.count - di > MAX_RESULTS:
                return False  # the claim's results would overflow: not this way
            candidate = request.all_devices[di]
            if not self._take(ci, request, candidate, must=True):
                return False
            if self._device(ci, ri, si, request, di + 1):
                return True
            self._release(ci, request, candidate)
            return False
        if di >= request.count:
            return self._one(ci, ri + 1)
        if len(self.chosen[ci]) + request.count - di > MAX_RESULTS:
            return False  # the claim's results would overflow: not this way
        claim = self.claims[ci]
        for candidate in self._candidates():
            if self._in_use(candidate.id, ci, request.admin):
                continue
            if not self.alloc.selectable((ci, ri, si), request, candidate, claim):
                continue
            if not self._take(ci, request, candidate, must=False):
                continue
            if self._device(ci, ri, si, request, di + 1):
                return True
            self._release(ci, request, candidate)
        return False

    def results(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for ci, claim in enumerate(self.claims):
            results: list[dict[str, Any]] = []
            for request, candidate, admin in self.chosen[ci]:
                entry: dict[str, Any] = {
                    "request": request,
                    "driver": candidate.id[0],
                    "pool": candidate.id[1],
                    "device": candidate.id[2],
                }
                if admin:
                    entry["adminAccess"] = True
                results.append(entry)
            allocation: dict[str, Any] = {"devices": {"results": results}}
            config = self._config(ci, claim)
            if config:
                allocation["devices"]["config"] = config
            try:
                selector = allocation_node_selector([c.slice_spec for _, c, _ in self.chosen[ci]])
            except ValueError as exc:
                raise AllocationError(
                    f"create NodeSelector for claim {claim_key(claim)}: {exc}"
                ) from exc
            if selector is not None:
                allocation["nodeSelector"] = selector
            out.append(allocation)
        return out

    def _config(self, ci: int, claim: Obj) -> list[dict[str, Any]]:
        """As v1.34's allocator writes them: each class's config once, naming the
        requests that use the class (a subrequest by "request/subrequest"); then each of
        the claim's own configs, once if it names no request, else once for each request
        it names (by name, or the subrequest taken by its full name)."""
        config: list[dict[str, Any]] = []
        by_class: dict[str, list[dict[str, Any]]] = {}
        picked = [alts[self.picked[ci][ri]] for ri, alts in enumerate(self.requests[ci])]
        for request in picked:
            name = (request.class_.get("metadata") or {}).get("name", "")
            if name in by_class:
                for entry in by_class[name]:
                    entry["requests"].append(request.full)
                continue
            entries = [
                {"source": "FromClass", "requests": [request.full], **c}
                for c in (request.class_.get("spec") or {}).get("config") or ()
            ]
            by_class[name] = entries
            config.extend(entries)
        for c in ((claim.get("spec") or {}).get("devices") or {}).get("config") or ():
            wanted = c.get("requests") or []
            if not wanted:
                config.append({"source": "FromClaim", **c})
                continue
            for request in picked:
                if request.base in wanted or (request.parent and request.full in wanted):
                    config.append({"source": "FromClaim", **c})
        return config
