"""resource.k8s.io/v1 (Dynamic Resource Allocation): DeviceClasses, ResourceClaims and
ResourceSlices, as DynamicResources reads them.

The specs and the claims' status stay plain dicts: the allocator (``kubesalvo.core.dra``)
reads selectors, requests, devices and allocations in the API's own shapes, and every
field of those may matter to it. ResourceClaimTemplates are not watched: the pod waits
for kube-controller-manager's resourceclaim controller to make its claim and to write the
claim's name into ``pod.status.resourceClaimStatuses``, as kube-scheduler does.
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
    "RESOURCESLICES",
    "DeviceClass",
    "ResourceClaim",
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


class ResourceSlice(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: dict[str, Any] = msgspec.field(default_factory=dict)


DEVICECLASSES = Resource("deviceclasses", f"{GROUP_VERSION}/deviceclasses", DeviceClass)
RESOURCECLAIMS = Resource("resourceclaims", f"{GROUP_VERSION}/resourceclaims", ResourceClaim)
RESOURCESLICES = Resource("resourceslices", f"{GROUP_VERSION}/resourceslices", ResourceSlice)
DRA_RESOURCES: tuple[Resource[Any], ...] = (DEVICECLASSES, RESOURCECLAIMS, RESOURCESLICES)


def dra_objects(
    classes: list[DeviceClass], claims: list[ResourceClaim], slices: list[ResourceSlice]
) -> DraObjects:
    """The informers' objects as the plain snapshot ``kubesalvo.core.dra`` takes."""
    return DraObjects.of(
        [msgspec.to_builtins(c) for c in classes],
        [msgspec.to_builtins(c) for c in claims],
        [msgspec.to_builtins(s) for s in slices],
    )
