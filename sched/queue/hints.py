"""Queueing hints: whether one cluster event can help a pod that one plugin rejected.

kube-scheduler's plugins pair each registered event with a hint function that looks at
the old and new object and answers Queue or Skip, so that (say) a node too small for the
pod does not wake it. These are kubesalvo's versions of the hints of the filters whose
events are frequent: NodeResourcesFit, NodeAffinity, TaintToleration, NodeUnschedulable,
InterPodAffinity and PodTopologySpread (every bind is a pod event for the last two), and
DynamicResources (every claim a PreBind writes is a claim event).
They reuse the per-node filter logic of ``kubesalvo.core.pernode`` on the
API-shaped dicts of the informers' objects.

A hint may only say Skip when it is sure: when an object is missing, or a setting it
cannot see could matter (the profile's ``ignoredResources``, ``addedAffinity``), it
answers Queue. The queue also treats a hint that raises as Queue.

One node event is asked about every parked pod, so what a hint derives from an object
(parsed requests, allocatable, selectors) is cached by the object's identity. That relies
on the informers' objects never being changed in place: an update brings a new object.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import msgspec

from kubesalvo.core.dra.pod import claim_change_helps
from kubesalvo.core.pernode.framework import (
    PodInvalid,
    SchedulingError,
    tolerated,
    untolerated_taint,
)
from kubesalvo.core.pernode.inter_pod_affinity import Term, pod_terms
from kubesalvo.core.pernode.node_affinity import RequiredNodeAffinity
from kubesalvo.core.pernode.node_unschedulable import UNSCHEDULABLE_TAINT
from kubesalvo.core.pernode.pod_topology_spread import Constraint, constraints
from kubesalvo.core.pernode.selectors import NOTHING, InvalidSelector
from kubesalvo.core.pernode.snapshot import NodeInfo, labels_of, namespace_of
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.coscheduling.gang import gang_of
from kubesalvo.core.plugins.pod_topology_spread import PodTopologySpreadArgs, SpreadDefaulting
from kubesalvo.core.resources import pod_requests
from kubesalvo.sched.queue.cluster_events import ClusterEvent, EventResource, HintFn

__all__ = ["DEFAULT_HINTS"]

# The resources every node reports; extended resources are left out of the fit check
# because the profile may ignore them (ignoredResources), which a hint cannot see.
_CORE_RESOURCES = ("cpu", "memory", "ephemeral-storage")


T = TypeVar("T")


class _ByIdentity(Generic[T]):
    """``fn(obj)`` remembered for the last ``size`` objects, keyed by identity.

    The cache keeps each object alive while it holds its value, so an id is never
    reused for another object while it is cached.
    """

    def __init__(self, fn: Callable[[Any], T], size: int) -> None:
        self._fn = fn
        self._size = size
        self._values: OrderedDict[int, tuple[Any, T]] = OrderedDict()

    def __call__(self, obj: Any) -> T:
        hit = self._values.get(id(obj))
        if hit is not None and hit[0] is obj:
            self._values.move_to_end(id(obj))
            return hit[1]
        value = self._fn(obj)
        self._values[id(obj)] = (obj, value)
        if len(self._values) > self._size:
            self._values.popitem(last=False)
        return value


def _to_api(obj: Any) -> Mapping[str, Any]:
    return obj if isinstance(obj, Mapping) else msgspec.to_builtins(obj)


_api = _ByIdentity(_to_api, 4096)
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
        found = _requests_by_shape[shape] = pod_requests(_to_api(pod))
        if len(_requests_by_shape) > 4096:
            _requests_by_shape.popitem(last=False)
    return found


_requests = _ByIdentity(_parse_requests, 65536)
_required = _ByIdentity(lambda pod: RequiredNodeAffinity(_to_api(pod)), 65536)
_node_info = _ByIdentity(lambda node: NodeInfo.of(_to_api(node)), 256)


def _allocatable(node: Any) -> Mapping[str, int]:
    return _node_info(node).allocatable


def _fits_empty(requests: Mapping[str, int], allocatable: Mapping[str, int]) -> bool:
    if allocatable.get("pods", 0) < 1:
        return False
    return all(requests.get(r, 0) <= allocatable.get(r, 0) for r in _CORE_RESOURCES)


def fit_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """NodeResourcesFit: a node that could hold the pod, or a scheduled pod gone."""
    if event.resource is EventResource.POD:
        if new is None and old is not None:
            spec, status = _api(old).get("spec") or {}, _api(old).get("status") or {}
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


def node_affinity_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """NodeAffinity: a node that now matches the pod's nodeSelector and required terms."""
    if event.resource is not EventResource.NODE or new is None:
        return True
    required = _required(pod)
    if not required.matches(_node_info(new)):
        return False
    return old is None or not required.matches(_node_info(old))


def taint_toleration_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """TaintToleration: a node whose NoSchedule/NoExecute taints the pod now tolerates."""
    if event.resource is not EventResource.NODE or new is None:
        return True
    api_pod = _api(pod)
    if untolerated_taint(api_pod, _node_info(new)) is not None:
        return False
    return old is None or untolerated_taint(api_pod, _node_info(old)) is not None


def node_unschedulable_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """NodeUnschedulable: a node that is (now) not cordoned, or a pod tolerating cordons."""
    if event.resource is not EventResource.NODE or new is None:
        return True
    tolerations = list((_api(pod).get("spec") or {}).get("tolerations") or ())
    if tolerated(tolerations, UNSCHEDULABLE_TAINT):
        return True
    if (_api(new).get("spec") or {}).get("unschedulable"):
        return False
    return old is None or bool((_api(old).get("spec") or {}).get("unschedulable"))


def _spec(obj: Any) -> Mapping[str, Any]:
    return _api(obj).get("spec") or {}


def _affinity_terms(pod: Any) -> tuple[list[Term], list[Term]] | None:
    """The pod's required affinity and anti-affinity terms; None if a hint cannot judge
    them (a namespaceSelector needs namespace labels, or a selector is invalid)."""
    try:
        terms = pod_terms(_api(pod), "podAffinity", True)
        anti = pod_terms(_api(pod), "podAntiAffinity", True)
    except InvalidSelector:
        return None
    if any(t.namespace_selector is not NOTHING for t in (*terms, *anti)):
        return None
    return terms, anti


_terms = _ByIdentity(_affinity_terms, 65536)


def _matches_all(terms: list[Term], other: Any) -> bool:
    api = _api(other)
    return bool(terms) and all(
        namespace_of(api) in t.namespaces and t.selector.matches(labels_of(api)) for t in terms
    )


def _anti_affinity_selects(placed: Any, pod: Any) -> bool:
    """Whether a placed pod's required anti-affinity selects ``pod`` (may, if unsure)."""
    found = _affinity_terms(placed)
    if found is None:
        return True
    return any(_matches_all([t], pod) for t in found[1])


def inter_pod_affinity_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """InterPodAffinity: a placed pod that the pod's affinity wants appeared, or one its
    anti-affinity (or whose anti-affinity) kept it away is gone."""
    if event.resource is not EventResource.POD:
        return True
    if any(o is not None and not _spec(o).get("nodeName") for o in (old, new)):
        return False  # only placed pods count
    found = _terms(pod)
    if found is None:
        return True
    terms, anti = found
    if old is not None and new is not None:
        return (not _matches_all(terms, old) and _matches_all(terms, new)) or (
            _matches_all(anti, old) and not _matches_all(anti, new)
        )
    if new is not None:
        return _matches_all(terms, new)
    if old is None:
        return True
    # Beyond kube-scheduler's hint: the deleted pod's own anti-affinity may have been
    # what rejected this pod (existing pods' anti-affinity), so that counts too.
    return _matches_all(anti, old) or _anti_affinity_selects(old, pod)


_NO_DEFAULTS = PodTopologySpreadArgs(defaulting_type=SpreadDefaulting.LIST)


def _hard_constraints(pod: Any) -> list[Constraint] | None:
    """The pod's own DoNotSchedule constraints; None when it has none of its own (the
    profile's defaults, which a hint cannot see, may have rejected it)."""
    api = _api(pod)
    if not (api.get("spec") or {}).get("topologySpreadConstraints"):
        return None
    try:
        # No snapshot is needed: with own constraints the defaults are never consulted.
        found = constraints(api, None, _NO_DEFAULTS, "DoNotSchedule")
    except (PodInvalid, SchedulingError):  # its attempt reports the invalid constraint
        return None
    return found or None


_constraints = _ByIdentity(_hard_constraints, 65536)


def _selected(cs: list[Constraint], other: Any) -> bool:
    return any(c.selector.matches(labels_of(_api(other))) for c in cs)


def _has_keys(cs: list[Constraint], node: Any) -> bool:
    node_labels = _node_info(node).labels
    return all(c.topology_key in node_labels for c in cs)


def pod_topology_spread_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """PodTopologySpread: a change in the counts of pods the constraints select, or a
    node that carries every topology key (or lost or changed them)."""
    cs = _constraints(pod)
    if cs is None:
        return True
    if event.resource is EventResource.POD:
        target = _api(pod)
        for o in (old, new):
            if o is None:
                continue
            api = _api(o)
            same_pod = (api.get("metadata") or {}).get("uid") == (target.get("metadata") or {}).get(
                "uid"
            )
            involved = same_pod or (
                bool(_spec(o).get("nodeName")) and namespace_of(api) == namespace_of(target)
            )
            if not involved:
                return False
        if old is not None and new is not None:
            if _spec(old).get("tolerations") != _spec(new).get("tolerations") and any(
                c.honor_node_taints for c in cs
            ):
                return True
            return any(
                c.selector.matches(labels_of(_api(old))) != c.selector.matches(labels_of(_api(new)))
                for c in cs
            )
        changed = new if new is not None else old
        return changed is None or _selected(cs, changed)
    if event.resource is not EventResource.NODE:
        return True
    if old is not None and new is not None:
        was, now = _has_keys(cs, old), _has_keys(cs, new)
        if was != now:
            return True
        if not now:
            return False
        before, after = _node_info(old), _node_info(new)
        keys_changed = any(
            before.labels.get(c.topology_key) != after.labels.get(c.topology_key) for c in cs
        )
        return keys_changed or before.taints != after.taints
    changed = new if new is not None else old
    return changed is None or _has_keys(cs, changed)


def dynamic_resources_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """A claim event helps when the claim is the pod's own and was made or changed
    status, or when any claim got deallocated (``core.dra.pod.claim_change_helps``); a
    pod event only for the pod itself (its claim named in its status). Class, slice and
    node events may bring devices: they always help."""
    if event.resource is EventResource.RESOURCE_CLAIM:
        return claim_change_helps(
            _api(pod),
            None if old is None else _to_api(old),
            None if new is None else _to_api(new),
        )
    if event.resource is EventResource.POD:
        other = new if new is not None else old
        return other is None or _api(other).get("metadata", {}).get("uid") == _api(pod).get(
            "metadata", {}
        ).get("uid")
    return True


def coscheduling_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """A gang waiting for members, or rolled back, is helped by a pod event only when the
    pod is one of its own members (bound by someone, or relabelled into the gang); room
    freed elsewhere wakes it through the filters that rejected its other members. Node
    events may bring room for a PodGroup's minResources."""
    if event.resource is not EventResource.POD:
        return True
    other = new if new is not None else old
    if other is None:
        return True
    group = gang_of(pod)
    return group is None or gang_of(other) == group


DEFAULT_HINTS: dict[str, HintFn] = {
    names.NODE_RESOURCES_FIT: fit_hint,
    names.NODE_AFFINITY: node_affinity_hint,
    names.TAINT_TOLERATION: taint_toleration_hint,
    names.NODE_UNSCHEDULABLE: node_unschedulable_hint,
    names.INTER_POD_AFFINITY: inter_pod_affinity_hint,
    names.POD_TOPOLOGY_SPREAD: pod_topology_spread_hint,
    names.COSCHEDULING: coscheduling_hint,
    names.DYNAMIC_RESOURCES: dynamic_resources_hint,
}
