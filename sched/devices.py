"""DynamicResources' runtime half: the watches, the devices a burst reserved, and PreBind.

``install`` (through the plugin handle), when a profile's filters run DynamicResources:
watches DeviceClasses, ResourceClaims and ResourceSlices (each holding readiness back until
it has synced), converts them for the allocator once per change (``DraConverter``) and
feeds the burst cycle's ``DeviceBook`` with them; hands their cluster events to the queue
(a claim created also releases the pods waiting for it); and gives the queue the plugin's
PreEnqueue (``claims_missing``: a pod waits until its claims exist).

A pod with resource claims is placed after the burst's other pods: alone
(``core.dra.pod``), or in a run of pods whose claims ask counts of one device class
(``core.dra.slots``). What it reserved - its claims' new allocations and the devices
they take - is kept here until the claims informer shows the allocations written: every
later pod sees those devices as held, and a claim whose allocation is reserved but not
written makes another pod sharing it wait ("in the process of being allocated"), as
kube-scheduler's in-flight allocations do.

PreBind (``BindingCycle.add_pre_bind``) writes, claim by claim and before the binding
POST, what kube-scheduler writes: the delete-protection finalizer, then the status with
the allocation and the pod added to ``reservedFor`` (a claim allocated already only gets
the pod added). A conflict re-reads the claim and tries again; a claim allocated by
someone else meanwhile fails the PreBind. Unreserve forgets the reservation and takes the
pod out of the ``reservedFor`` it was written into, so that kube-controller-manager's
claim controller may deallocate the claim.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import msgspec

from kubesalvo.core.dra import slots
from kubesalvo.core.dra.allocator import DeviceId, allocated_devices
from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.pod import PodDevices, Reserved, left_out, prefilter
from kubesalvo.core.dra.selectors import Selectors
from kubesalvo.core.plugins import dynamic_resources, names
from kubesalvo.core.plugins.framework import ActionType, ClusterEvent, EventResource, event_label
from kubesalvo.sched.client import ApiClient, ApiError
from kubesalvo.sched.informers import ADDED, DELETED, Change, Informer
from kubesalvo.sched.informers.models import Pod
from kubesalvo.sched.informers.resources import DRA_RESOURCES, DraConverter
from kubesalvo.sched.plugin_handle import PluginHandle
from kubesalvo.sched.queue import QueuedPod, pod_key

__all__ = ["FINALIZER", "DeviceBook", "install"]

log = logging.getLogger(__name__)

FINALIZER = "resource.kubernetes.io/delete-protection"
_CLAIMS = "/apis/resource.k8s.io/v1/namespaces/{}/resourceclaims/{}"
_CONFLICT_RETRIES = 5


class DeviceBook:
    """Reservations by pod uid, PreBind and Unreserve (a PreBindPlugin)."""

    name = dynamic_resources.NAME

    def __init__(self, client: ApiClient, objects: Callable[[], DraObjects] = DraObjects) -> None:
        self.client = client
        # the objects as the informers hold them now (``install`` sets them)
        self.objects = objects
        self.selectors = Selectors()
        self._reserved: dict[str, Reserved] = {}
        # The pods whose PreBind wrote their claims: their reservations end once the
        # informer shows the allocations (before, a reservation is kept whatever it holds).
        self._written: set[str] = set()
        self._allocated: set[DeviceId] = set()
        self._allocated_of: DraObjects | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # --- the burst's side ------------------------------------------------------------

    def prefilter(self, pod: dict[str, Any], timeout: float = 0.0) -> PodDevices:
        """DynamicResources' PreFilter for ``pod`` against the informers' objects and
        what earlier pods reserved (``timeout``: the profile's filterTimeout)."""
        objects = self.objects()
        held, pending = self._held(objects)
        return prefilter(pod, objects, self.selectors, held, pending, timeout)

    def prefilter_left_out(self, pod: dict[str, Any], timeout: float = 0.0) -> PodDevices:
        """:meth:`prefilter` for a pod placed already, as if it were not there (``explain``:
        the Score it had, against the cluster as it is now): its claims deallocated where
        only it used them (``left_out``), its own reservation not held."""
        uid = (pod.get("metadata") or {}).get("uid", "")
        objects = self.objects()
        held, pending = self._held(objects)
        view = left_out(objects, uid)
        mine = self._reserved.get(uid)
        if mine is not None:
            held -= mine.devices
            pending -= {(c.get("metadata") or {}).get("uid", "") for c, _ in mine.claims}
        changed = [k for k, c in objects.claims.items() if view.claims[k] is not c]
        held -= allocated_devices(objects.claims[k] for k in changed) - allocated_devices(
            view.claims[k] for k in changed
        )
        return prefilter(pod, view, self.selectors, held, pending, timeout)

    def reserve(self, uid: str, devices: PodDevices, node: str) -> None:
        self.keep(uid, devices.reserve(node))

    def keep(self, uid: str, reserved: Reserved) -> None:
        """Hold what Reserve took for the pod until its allocations are written."""
        self._reserved[uid] = reserved
        self._written.discard(uid)

    def counted_run(
        self, pods: list[dict[str, Any]]
    ) -> tuple[list[slots.Countable], DraObjects, set[DeviceId]] | None:
        """The first of ``pods`` whose claims ask counts of one class (``core.dra.slots``),
        with the objects and held devices to place them against; None when fewer than
        two are (the first pod is then placed alone). Called on the event loop, as
        ``prefilter`` is: the informers' stores and the reservations change there."""
        objects = self.objects()
        held, pending = self._held(objects)
        run = slots.countable_run(pods, objects, self.selectors, held, pending, len(pods))
        if len(run) < 2:
            return None
        return run, objects, held

    def _held(self, objects: DraObjects) -> tuple[set[DeviceId], set[str]]:
        """Devices of allocated claims and of reservations not yet written, and the uids
        of the claims those reservations will allocate. Reservations whose allocations
        the informer shows are dropped, and so are those whose claims it no longer has
        once PreBind wrote them: the pod went, the claim controller deleted its claim,
        and the devices are free again (kept, they would be held for good)."""
        if objects is not self._allocated_of:  # once per snapshot of the claims
            self._allocated = allocated_devices(objects.claims.values())
            self._allocated_of = objects
        held = set(self._allocated)
        pending: set[str] = set()
        for uid, reserved in list(self._reserved.items()):
            waiting = False
            for claim, allocation in reserved.claims:
                if allocation is None:
                    continue
                meta = claim.get("metadata") or {}
                now = objects.claims.get((meta.get("namespace", ""), meta.get("name", "")))
                if now is None and uid in self._written:
                    continue  # written, then deleted: nothing of it is held any more
                written = now is not None and (now.get("status") or {}).get("allocation")
                if not written:
                    waiting = True
                    pending.add(meta.get("uid", ""))
            if waiting:
                held |= reserved.devices
            elif uid in self._written:
                del self._reserved[uid]
                self._written.discard(uid)
        return held, pending

    # --- PreBind ---------------------------------------------------------------------

    def wants(self, qp: QueuedPod, node: str) -> bool:
        reserved = self._reserved.get(qp.pod.metadata.uid)
        return reserved is not None and reserved.node == node

    async def pre_bind(self, qp: QueuedPod, node: str) -> None:
        meta = qp.pod.metadata
        reserved = self._reserved.get(meta.uid)
        if reserved is None or reserved.node != node:
            raise RuntimeError(f"no reservation of pod {meta.namespace}/{meta.name} on {node}")
        for claim, allocation in reserved.claims:
            await self._bind_claim(claim, allocation, meta.name, meta.uid)
        self._written.add(meta.uid)

    async def _bind_claim(
        self, claim: dict[str, Any] | Any, allocation: dict[str, Any] | None, pod: str, uid: str
    ) -> None:
        meta = claim.get("metadata") or {}
        path = _CLAIMS.format(meta.get("namespace", ""), meta.get("name", ""))
        for attempt in range(_CONFLICT_RETRIES):
            current = msgspec.json.decode((await self.client.request("GET", path)).body)
            if (current.get("metadata") or {}).get("uid") != meta.get("uid"):
                raise RuntimeError(f"claim {meta.get('name')} got deleted in the meantime")
            status = current.setdefault("status", {})
            reserved = status.get("reservedFor") or []
            if any(r.get("uid") == uid for r in reserved):
                return
            try:
                if allocation is not None:
                    if status.get("allocation"):
                        raise RuntimeError(
                            f"claim {meta.get('name')} got allocated elsewhere in the meantime"
                        )
                    finalizers = current["metadata"].setdefault("finalizers", [])
                    if FINALIZER not in finalizers:
                        finalizers.append(FINALIZER)
                        answer = await self.client.request(
                            "PUT", path, body=msgspec.json.encode(current)
                        )
                        current = msgspec.json.decode(answer.body)
                        status = current.setdefault("status", {})
                    status["allocation"] = allocation
                status["reservedFor"] = [
                    *(status.get("reservedFor") or []),
                    {"resource": "pods", "name": pod, "uid": uid},
                ]
                await self.client.request(
                    "PUT", f"{path}/status", body=msgspec.json.encode(current)
                )
                return
            except ApiError as error:
                if error.status != 409 or attempt == _CONFLICT_RETRIES - 1:
                    raise
        raise RuntimeError(f"claim {meta.get('name')}: too many conflicts")

    # --- Unreserve -------------------------------------------------------------------

    def unreserve(self, qp: QueuedPod, node: str) -> None:
        reserved = self._reserved.pop(qp.pod.metadata.uid, None)
        self._written.discard(qp.pod.metadata.uid)
        if reserved is None:
            return
        task = asyncio.get_running_loop().create_task(
            self._unreserve(reserved, qp.pod.metadata.uid)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _unreserve(self, reserved: Reserved, uid: str) -> None:
        for claim, _ in reserved.claims:
            meta = claim.get("metadata") or {}
            path = _CLAIMS.format(meta.get("namespace", ""), meta.get("name", ""))
            patch = {
                "metadata": {"uid": meta.get("uid", "")},
                "status": {"reservedFor": [{"$patch": "delete", "uid": uid}]},
            }
            try:
                await self.client.request(
                    "PATCH",
                    f"{path}/status",
                    body=msgspec.json.encode(patch),
                    content_type="application/strategic-merge-patch+json",
                )
            except ApiError as error:
                if error.status != 404:
                    log.warning("unreserve of claim %s failed: %s", meta.get("name"), error)


# The event resource of each DRA informer (DRA_RESOURCES' order).
_EVENTS = (EventResource.DEVICE_CLASS, EventResource.RESOURCE_CLAIM, EventResource.RESOURCE_SLICE)


def install(handle: PluginHandle) -> None:
    book = handle.live.get(names.DYNAMIC_RESOURCES)
    if not isinstance(book, DeviceBook):
        return  # no profile filters with DynamicResources
    watches = _Watches(handle)
    book.objects = watches.objects
    handle.queue.claims_missing = watches.claims_missing


class _Watches:
    """The DRA informers and their objects, converted once per change."""

    def __init__(self, handle: PluginHandle) -> None:
        self.queue = handle.queue
        self.informers: list[Informer[Any]] = [
            handle.watch(resource, self._handler(kind), ready=True)
            for resource, kind in zip(DRA_RESOURCES, _EVENTS, strict=True)
        ]
        self._convert = DraConverter()
        self._snapshot: DraObjects | None = None
        # claim (namespace/name) -> the queue keys of pods found waiting for it; a pod
        # that waits for its template's claim to be named is released by its own update
        self._waiting: dict[str, set[str]] = {}

    def objects(self) -> DraObjects:
        # Converted once per change of the objects, not once per pod with claims.
        if self._snapshot is None:
            classes, claims, slices = (list(i.store.values()) for i in self.informers)
            self._snapshot = self._convert(classes, claims, slices)
        return self._snapshot

    def _handler(self, resource: EventResource) -> Callable[[Change[Any]], None]:
        """Cluster events of one DRA informer for the queue (DynamicResources registered
        adds and updates of classes, claims and slices)."""

        def handle(change: Change[Any]) -> None:
            self._snapshot = None  # rebuilt at the next pod with claims
            if change.obj is None:
                return
            if change.type == ADDED:
                action = ActionType.ADD
            elif change.type == DELETED:
                action = ActionType.DELETE
            else:
                action = ActionType.UPDATE_OTHER
            event = ClusterEvent(resource, action, event_label(resource, action))
            self.queue.on_event(event, change.old, change.obj)
            if resource is EventResource.RESOURCE_CLAIM and action is ActionType.ADD:
                # Only the pods PreEnqueue held back for this claim (its queueing hint).
                meta = change.obj.metadata
                waiting = self._waiting.pop(f"{meta.namespace}/{meta.name}", None)
                if waiting:
                    self.queue.release_gated(names.DYNAMIC_RESOURCES, str(event), waiting)

        return handle

    def claims_missing(self, pod: Pod) -> bool:
        """DynamicResources' PreEnqueue: a claim of the pod is not made yet (its template's
        claim not named in the pod's status) or not in the claims informer."""
        claims = self.informers[1].store
        made = {
            s.get("name"): s.get("resourceClaimName") for s in pod.status.resource_claim_statuses
        }
        for entry in pod.spec.resource_claims:
            name = entry.get("resourceClaimName")
            if not name:
                if entry.get("name") not in made:
                    return True
                name = made[entry.get("name")]
                if not name:
                    continue  # the controller made none for it: nothing to wait for
            key = f"{pod.metadata.namespace}/{name}"
            if key not in claims:
                self._waiting.setdefault(key, set()).add(pod_key(pod))
                return True
        return False
