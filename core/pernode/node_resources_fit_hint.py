"""NodeResourcesFit's queueing hint: a node that could hold the pod, or a placed pod gone.

Extended resources are left out of the fit check because the profile may ignore them
(``ignoredResources``), which a hint cannot see: it answers Queue when unsure.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import msgspec

from kubesalvo.core.pernode.hint_objects import ByIdentity, api, node_info
from kubesalvo.core.plugins.framework import ClusterEvent, EventResource
from kubesalvo.core.resources import pod_requests

__all__ = ["queueing_hint"]

# The resources every node reports.
_CORE_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_requests_by_shape: OrderedDict[bytes, Mapping[str, int]] = OrderedDict()


def _parse_requests(pod: Any) -> Mapping[str, int]:
    """A pod's requests; replicas share them, so they are parsed once per pod shape."""
    if isinstance(pod, Mapping):
        return pod_requests(pod)
    spec = pod.spec
    shape = msgspec.json.encode(
        (spec.containers, spec.init_containers, spec.overhead, spec.resources)
    )
    found = _requests_by_shape.get(shape)
    if found is None:
        found = _requests_by_shape[shape] = pod_requests(api(pod))
        if len(_requests_by_shape) > 4096:
            _requests_by_shape.popitem(last=False)
    return found


_requests = ByIdentity(_parse_requests, 65536)


def _allocatable(node: Any) -> Mapping[str, int]:
    return node_info(node).allocatable


def _fits_empty(requests: Mapping[str, int], allocatable: Mapping[str, int]) -> bool:
    if allocatable.get("pods", 0) < 1:
        return False
    return all(requests.get(r, 0) <= allocatable.get(r, 0) for r in _CORE_RESOURCES)


def queueing_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """NodeResourcesFit: a node that could hold the pod, or a scheduled pod gone."""
    if event.resource is EventResource.POD:
        if new is None and old is not None:
            spec, status = api(old).get("spec") or {}, api(old).get("status") or {}
            # An unscheduled pod that goes away freed nothing.
            return bool(spec.get("nodeName") or status.get("nominatedNodeName"))
        return True
    if event.resource is not EventResource.NODE or new is None:
        return True
    requests = _requests(pod)
    allocatable = _allocatable(new)
    if not _fits_empty(requests, allocatable):
        return False
    if old is None:
        return True
    before = _allocatable(old)
    if allocatable.get("pods", 0) > before.get("pods", 0):
        return True
    return any(
        requests.get(r, 0) > 0 and allocatable.get(r, 0) > before.get(r, 0) for r in _CORE_RESOURCES
    )
