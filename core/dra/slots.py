"""Free devices counted per node: many claiming pods in one segment of a burst.

A pod with resource claims takes devices, so it is placed alone (``core/dra/pod.py``):
what it takes changes what the next pod can have. When every claim of a pod is its own
(made from a template, or named and unallocated and used by no other pod of the run)
and asks only counts (ExactCount) of one device class, without selectors of its own,
adminAccess or constraints, any free device of the class serves any of its requests
(``Allocator.count_only``): the pod fits a node exactly when the node has that many
free devices the class selects. For a run of such pods of one class, what the next pod
can use is a count per node. The run is placed as one segment, with that count as a
resource column each pod requests its number of (the kernel's fit does the rest), and
Reserve then gives each placed pod, in order, the devices the allocator's search picks
on its node with the earlier pods' devices held, as one pod at a time would get them.

A pod of the run that fits nowhere is taken back, with the pods after it, and placed
alone by the caller, so that it fails for DynamicResources' own reasons and texts. The
tie stream is rewound and the pods before it placed again, so that every pod draws its
ties from where one pod at a time would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from kubesalvo.core.dra.allocator import Allocator, DeviceId
from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.pod import Reserved, prefilter
from kubesalvo.core.dra.selectors import SelectorError, Selectors
from kubesalvo.core.results import PlacementResult, head
from kubesalvo.core.state import ClusterState, pod_key
from kubesalvo.core.ties import TieBreak

__all__ = ["COLUMN", "Countable", "CountedRun", "countable_run", "place_run"]

COLUMN = "kubesalvo.io/free-devices"

Obj = Mapping[str, Any]
# place_burst's signature as this module calls it (state, pods, profile, commit=, ties=, ...)
Place = Callable[..., PlacementResult]


@dataclass(frozen=True)
class Countable:
    """A pod whose claims are counted: its claims (all to allocate), their class and the
    number of devices they ask in all."""

    claims: list[Obj]
    class_name: str
    count: int


def countable(
    pod: Obj, objects: DraObjects, selectors: Selectors, held: set[DeviceId], pending: Set[str]
) -> Countable | None:
    """The pod's claims as a count of one class, or None when it must be placed alone
    (a rejection or an error at PreFilter, an allocated claim, a selector, a constraint,
    adminAccess, All mode, two classes)."""
    state = prefilter(pod, objects, selectors, held, pending)
    if state.rejection or state.error or not state.claims or state.allocator is None:
        return None
    if len(state.to_allocate) != len(state.claims):
        return None  # an allocated claim: where it can be used is not counted
    class_name, total = "", 0
    for claim in state.to_allocate:
        found = state.allocator.count_only([claim])
        if found is None:
            return None
        name = (found[0].get("metadata") or {}).get("name", "")
        if class_name not in ("", name):
            return None
        class_name, total = name, total + found[1]
    return Countable(list(state.to_allocate), class_name, total)


def countable_run(
    pods: Sequence[Obj],
    objects: DraObjects,
    selectors: Selectors,
    held: set[DeviceId],
    pending: Set[str],
    limit: int,
) -> list[Countable]:
    """The longest run (at most ``limit``) of the first pods that are countable, of one
    class, no claim used by two of them; empty when the first pod is not countable."""
    run: list[Countable] = []
    seen: set[str] = set()
    for pod in pods[:limit]:
        found = countable(pod, objects, selectors, held, pending)
        if found is None or (run and found.class_name != run[0].class_name):
            break
        uids = {(c.get("metadata") or {}).get("uid", "") for c in found.claims}
        if uids & seen:
            break  # a shared claim: the second pod reuses the first one's allocation
        seen |= uids
        run.append(found)
    return run


def _free_per_row(
    state: ClusterState, allocator: Allocator, class_: Obj
) -> dict[int, tuple[str, dict[str, str]]] | None:
    """Each node row with its free devices of the class set in the column, and the
    node's name and labels by row; None when a selector fails on some device (the pods
    are then placed alone, where the search meets the failure as upstream's does)."""
    column = state.resource_column(COLUMN)
    state.allocatable[:, column] = 0
    state.requested[:, column] = 0
    labelled = allocator.needs_labels()
    nodes: dict[int, tuple[str, dict[str, str]]] = {}
    for row, name in enumerate(state.names):
        if name is None:
            continue
        labels = state.node_labels[row] if labelled else {}
        try:
            free = allocator.free_devices(class_, name, labels)
        except SelectorError:
            state.allocatable[:, column] = 0
            return None
        state.allocatable[row, column] = free
        nodes[row] = (name, labels)
    return nodes


def _with_request(pod: Obj, count: int) -> dict[str, Any]:
    """A copy of the pod without its claims, asking ``count`` of the column instead (as
    pod overhead, which the fit adds to its containers' requests)."""
    spec = dict(pod.get("spec") or {})
    spec.pop("resourceClaims", None)
    spec["overhead"] = {**(spec.get("overhead") or {}), COLUMN: str(count)}
    return {**pod, "spec": spec}


@dataclass
class CountedRun:
    """What ``place_run`` placed: the result of the pods kept (a prefix of the run), the
    devices each placed pod reserved, and whether the pod after them fits nowhere."""

    result: PlacementResult | None
    reserved: list[Reserved]
    cut: bool


def place_run(
    place: Place,
    state: ClusterState,
    pods: Sequence[Obj],
    run: Sequence[Countable],
    profile: Any,
    objects: DraObjects,
    selectors: Selectors,
    held: set[DeviceId],
    ties: TieBreak,
    workloads: Sequence[Obj] = (),
) -> CountedRun:
    """Place ``pods`` (the run's, in order) as one segment committed in ``state``, each
    asking its count of the class's free devices per node; then reserve each placed
    pod's devices on its node. Placement stops before the first pod that fits nowhere
    (``cut``; the caller places it alone). ``result`` is None when the devices cannot be
    counted after all (the caller places the pods alone)."""
    class_ = objects.classes[run[0].class_name]
    allocator = Allocator(objects, selectors, set(held))
    nodes = _free_per_row(state, allocator, class_)
    if nodes is None:
        return CountedRun(None, [], False)
    column = state.resource_column(COLUMN)
    free = state.allocatable[:, column].copy()
    segment = [_with_request(pod, c.count) for pod, c in zip(pods, run, strict=True)]
    rewind = ties.state.copy()
    try:
        result = place(state, segment, profile, commit=True, workloads=workloads, ties=ties)
        failed = next((i for i, row in enumerate(result.rows) if row < 0), None)
        if failed is not None:
            # Taken back whole and the head placed again from the same tie stream, so
            # that the pods after the head draw as they would one at a time.
            for offset, row in enumerate(result.rows):
                if row >= 0:
                    state.remove_pod_key(pod_key(segment[offset]))
            ties.state[:] = rewind
            state.requested[:, column] = 0
            state.allocatable[:, column] = free
            if failed:
                result = place(
                    state, segment[:failed], profile, commit=True, workloads=workloads, ties=ties
                )
    finally:
        state.allocatable[:, column] = 0
        state.requested[:, column] = 0
    keep = len(segment) if failed is None else failed
    reserved: list[Reserved] = []
    for offset in range(keep):  # every pod of the head was placed
        record = state.pod_record(pod_key(segment[offset]))
        if record is not None:
            record.requests.pop(column, None)
        name, labels = nodes[int(result.rows[offset])]
        reserved.append(_reserve(allocator, run[offset].claims, name, labels))
    return CountedRun(head(result, keep), reserved, failed is not None)


def _reserve(allocator: Allocator, claims: list[Obj], node: str, labels: Obj) -> Reserved:
    """The search's allocation on the node for the claims, its devices then held."""
    search = allocator.search(claims, node, labels)
    if search is None:  # the count said the node had them: the search must agree
        raise RuntimeError(f"no devices on {node} for claims it counted free devices for")
    allocations = search()
    devices: set[DeviceId] = set()
    for allocation in allocations:
        for found in (allocation.get("devices") or {}).get("results") or ():
            devices.add((found["driver"], found["pool"], found["device"]))
    allocator.held |= devices
    return Reserved(node, list(zip(claims, allocations, strict=True)), frozenset(devices))
