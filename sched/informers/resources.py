"""resource.k8s.io/v1 (Dynamic Resource Allocation): DeviceClasses, ResourceClaims and
ResourceSlices, as DynamicResources reads them.

The specs and the claims' status stay plain dicts: the allocator (``kubesalvo.core.dra``)
reads selectors, requests, devices and allocations in the API's own shapes, and every
field of those may matter to it. ResourceClaimTemplates are not watched: the pod waits
for kube-controller-manager's resourceclaim controller to make its claim and to write the
claim's name into ``pod.status.resourceClaimStatuses``, as kube-scheduler does; only
``kubesalvo snapshot`` lists them (``RESOURCECLAIMTEMPLATES``), for simulate to make the
claims the controller would.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.sched.informers.models import ObjectMeta, _Api
from kubesalvo.sched.informers.watch import Resource

__all__ = [
    "DEVICECLASSES",
    "DRA_RESOURCES",
    "RESOURCECLAIMS",
    "RESOURCECLAIMTEMPLATES",
    "RESOURCESLICES",
    "DeviceClass",
    "DraConverter",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "dra_objects",
]

GROUP_VERSION = "/apis/resource.k8s.io/v1"


class DeviceClass(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: dict[str, Any] = msgspec.field(default_factory=dict)


class ResourceClaim(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: dict[str, Any] = msgspec.field(default_factory=dict)
    status: dict[str, Any] = msgspec.field(default_factory=dict)  # allocation, reservedFor


class ResourceClaimTemplate(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: dict[str, Any] = msgspec.field(default_factory=dict)  # metadata, spec


class ResourceSlice(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: dict[str, Any] = msgspec.field(default_factory=dict)


DEVICECLASSES = Resource("deviceclasses", f"{GROUP_VERSION}/deviceclasses", DeviceClass)
RESOURCECLAIMS = Resource("resourceclaims", f"{GROUP_VERSION}/resourceclaims", ResourceClaim)
RESOURCESLICES = Resource("resourceslices", f"{GROUP_VERSION}/resourceslices", ResourceSlice)
DRA_RESOURCES: tuple[Resource[Any], ...] = (DEVICECLASSES, RESOURCECLAIMS, RESOURCESLICES)
RESOURCECLAIMTEMPLATES = Resource(
    "resourceclaimtemplates", f"{GROUP_VERSION}/resourceclaimtemplates", ResourceClaimTemplate
)


def dra_objects(
    classes: list[DeviceClass], claims: list[ResourceClaim], slices: list[ResourceSlice]
) -> DraObjects:
    """The informers' objects as the plain snapshot ``kubesalvo.core.dra`` takes."""
    return DraObjects.of(
        [msgspec.to_builtins(c) for c in classes],
        [msgspec.to_builtins(c) for c in claims],
        [msgspec.to_builtins(s) for s in slices],
    )


class DraConverter:
    """``dra_objects`` that converts only the objects that changed since its last call.

    Every claim's update (each PreBind writes one, the controller makes one per pod)
    invalidates the snapshot; converting every class, claim and slice again for the next
    pod with claims cost more than placing it. An informer replaces an object it updates,
    so an object still in the store (the same one, by identity) converts as before, and
    the unchanged devices stay the same dicts from one snapshot to the next (which lets
    ``core.dra.selectors`` remember their verdicts across pods).
    """

    def __init__(self) -> None:
        self._done: dict[int, tuple[Any, dict[str, Any]]] = {}

    def __call__(
        self, classes: list[DeviceClass], claims: list[ResourceClaim], slices: list[ResourceSlice]
    ) -> DraObjects:
        done: dict[int, tuple[Any, dict[str, Any]]] = {}

        def plain(objects: list[Any]) -> list[dict[str, Any]]:
            out = []
            for obj in objects:
                known = self._done.get(id(obj))
                if known is None or known[0] is not obj:
                    known = (obj, msgspec.to_builtins(obj))
                done[id(obj)] = known
                out.append(known[1])
            return out

        objects = DraObjects.of(plain(classes), plain(claims), plain(slices))
        self._done = done  # objects gone from the stores are forgotten
        return objects
