"""DynamicResources: resource claims (DRA), with kube-scheduler v1.34's semantics and texts.

The caller resolves a pod's claims into its cycle state (``core/dra/pod.py``:
``prefilter`` builds a ``PodDevices``, which runs ``allocator``, the
structured-parameters allocator, and ``selectors``, CEL), given to its class as
``devices``. This module's contributions read it: :data:`CLAIMS_PREFILTER` (the claims'
rejection or error, for every node), :data:`NODE_FILTER` (the Filter, node by node on the
rows the earlier filters passed, with three reasons) and :data:`SCORE_CHANNEL`. The
runtime places a pod with claims alone, after the burst's other pods; Reserve holds its
devices for the rest of the burst and PreBind writes the claims' allocation and
reservedFor before the binding.

Without the runtime's DRA objects (``kubesalvo simulate``, core's callers that give no
``devices``), a pod with claims is rejected by the PreFilter with :data:`NOT_ALLOCATED`
rather than bound without its devices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core.args_reading import ArgsDecoder, build, open_args
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    POST_FILTER,
    PRE_BIND,
    PRE_ENQUEUE,
    PRE_FILTER,
    RESERVE,
    SCORE,
    ActionType,
    ClusterEvent,
    Code,
    EventResource,
    FieldError,
    HintFn,
    NodeFilter,
    NodeFilterResult,
    NodeTable,
    Normalise,
    PerNode,
    PluginSpec,
    PodClass,
    PreFilter,
    PreFilterResult,
    ScoreChannel,
    check,
    non_negative,
)

__all__ = [
    "CANNOT_ALLOCATE",
    "CLAIMS_PREFILTER",
    "CLAIM_IN_USE",
    "CLAIM_NOT_CREATED",
    "FIRST_AVAILABLE_MAX",
    "NAME",
    "NODE_FILTER",
    "NOT_ALLOCATED",
    "NOT_AVAILABLE_ON_NODE",
    "NO_NEW_CLAIMS_TO_DEALLOCATE",
    "STILL_NOT_SCHEDULABLE",
    "TIMED_OUT",
    "DynamicResourcesArgs",
    "claim_being_allocated",
    "claim_being_deleted",
    "claim_not_for_pod",
    "claim_not_found",
    "class_missing",
    "prefilter_error",
    "subrequest_score",
]

NAME = names.DYNAMIC_RESOURCES
# Its PostFilter's answer for a pod without resource claims. With the default profile
# both DynamicResources and DefaultPreemption run there, and their reasons are joined by
# ", ": "... 2 node(s) had untolerated taint(s). no new claims to deallocate, preemption:
# 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
NO_NEW_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
# Its PostFilter's answer for a pod with claims when no allocated claim of it could be
# deallocated to help (kubesalvo never deallocates: see docs/plugins.md).
STILL_NOT_SCHEDULABLE = "still not schedulable"
# kubesalvo's own PreFilter rejection of a pod with resource claims when the caller has no
# DRA objects to allocate from (no upstream text: an upstream scheduler has them).
NOT_ALLOCATED = "kubesalvo does not allocate resource claims yet (DynamicResources)"
# Filter, per node.
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE_ON_NODE = "resourceclaim not available on the node"
# The allocator ran longer than the args' filterTimeout on a node (v1.34: unresolvable).
TIMED_OUT = "timed out trying to allocate devices"
# PreFilter, for every node (UnschedulableAndUnresolvable).
CLAIM_IN_USE = "resourceclaim in use"
CLAIM_NOT_CREATED = "ResourceClaim not created yet"


def claim_not_found(name: str) -> str:
    """The claim lister's NotFound error, as kube-scheduler reports it."""
    return f'resourceclaim.resource.k8s.io "{name}" not found'


def claim_being_deleted(name: str) -> str:
    return f'resourceclaim "{name}" is being deleted'


def claim_not_for_pod(claim: str, namespace: str, pod: str) -> str:
    """A claim named by the pod's status for a template, owned by another pod."""
    return f"ResourceClaim {claim} was not created for pod {namespace}/{pod} (pod is not owner)"


def claim_being_allocated(claim: str) -> str:
    """A claim whose allocation an earlier pod reserved and has not written yet."""
    return f"resource claim {claim} is in the process of being allocated"


def class_missing(request: str, device_class: str) -> str:
    return f"request {request}: device class {device_class} does not exist"


def prefilter_error(error: str) -> str:
    """A PreFilter error, which fails the attempt (no node is tried)."""
    return f'running PreFilter plugin "{NAME}": {error}'


# resourceapi.FirstAvailableDeviceRequestMaxSize: the most subrequests a request may list.
FIRST_AVAILABLE_MAX = 8


def subrequest_score(
    claims: Iterable[Mapping[str, Any]], allocations: Iterable[Mapping[str, Any] | None]
) -> int:
    """Score (kube-scheduler v1.37; v1.34 has none) of a node, before normalisation.

    ``claims``: the pod's claims; ``allocations``: per claim, the allocation it would have
    on the node (its ``status.allocation`` when allocated already). Each firstAvailable
    request adds ``FIRST_AVAILABLE_MAX - i`` for the subrequest ``i`` its results name, so
    the node where the earlier subrequests can be served scores higher; ``exactly``
    requests add nothing. The plugin normalises the sums over the feasible nodes (the
    highest scores 100).
    """
    score = 0
    for claim, allocation in zip(claims, allocations, strict=True):
        results = ((allocation or {}).get("devices") or {}).get("results") or ()
        taken = {r.get("request", "") for r in results if "/" in r.get("request", "")}
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
            if request.get("exactly") is not None:
                continue
            for i, sub in enumerate(request.get("firstAvailable") or ()):
                if f"{request.get('name', '')}/{sub.get('name', '')}" in taken:
                    score += FIRST_AVAILABLE_MAX - i
    return score


def _raw_scores(args: Any, nodes: NodeTable, pod: PodClass) -> npt.NDArray[np.int64]:
    """The Score's raw values per row (:func:`subrequest_score` on the allocation its
    Filter found there) for the class's one pod with claims; 0 everywhere for a class
    without its cycle state (no claims, or placed without DRA objects)."""
    devices = pod.devices
    if devices is None:
        return np.zeros(len(nodes.node_names()), dtype=np.int64)
    scores: npt.NDArray[np.int64] = devices.scores(nodes.node_names())
    return scores


def _key(args: Any, nodes: NodeTable, pod: PodClass) -> Any:
    """Each pod with claims has raw values of its own (its cycle's allocations)."""
    devices = pod.devices
    return None if devices is None else (devices.pod.get("metadata") or {}).get("uid", "")


def _prefilter(args: Any, nodes: NodeTable, pod: PodClass) -> PreFilterResult | None:
    """What the claims' resolution found for every node: without a cycle state (no DRA
    objects to allocate from) :data:`NOT_ALLOCATED`, as binding the pod without its
    devices would put it where it cannot use them; else its rejection or error."""
    devices = pod.devices
    if devices is None:
        return PreFilterResult(message=NOT_ALLOCATED)
    if devices.rejection:
        return PreFilterResult(message=devices.rejection)
    if devices.error:
        return PreFilterResult(error=devices.error)
    return None


def _filter(
    args: Any, nodes: NodeTable, pod: PodClass, rows: npt.NDArray[np.bool_]
) -> NodeFilterResult | None:
    """The Filter on each of ``rows``: the claims' allocation there (PodDevices)."""
    devices = pod.devices
    if devices is None:  # the PreFilter rejected the pod already
        return None
    failing = devices.filter_failing(nodes.node_names(), rows, nodes.labels_of)
    if devices.error:  # an allocator error ends the attempt
        return NodeFilterResult(error=devices.error)
    return NodeFilterResult(failing=failing)


CLAIMS_PREFILTER = PreFilter(_prefilter, reads="resourceClaims")
NODE_FILTER = NodeFilter(
    _filter, reads="resourceClaims", reasons=(CANNOT_ALLOCATE, NOT_AVAILABLE_ON_NODE, TIMED_OUT)
)
# v1.37's Score, normalised over the pod's feasible nodes by the kernel (DefaultNormalizeScore).
SCORE_CHANNEL = ScoreChannel(Normalise.MAX, _raw_scores, key=_key, reads="resourceClaims")


@dataclass(frozen=True)
class DynamicResourcesArgs:
    """DynamicResourcesArgs: the Filter's time limit per node, in seconds (0: none)."""

    filter_timeout_seconds: float = 10.0

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        return non_negative(
            "filterTimeout", self.filter_timeout_seconds, "must be zero or positive"
        )


EVENTS = (
    ClusterEvent(
        EventResource.NODE,
        ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE,
    ),
    ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE_OTHER),
    ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
    ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE_OTHER),
    ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE_OTHER),
)


def _queueing_hint() -> HintFn:
    """Its queueing hint, which reads the per-node logic that imports this module."""
    from kubesalvo.core.pernode.dynamic_resources_hint import queueing_hint

    return queueing_hint


def read_args(d: ArgsDecoder, raw: Any, path: str) -> DynamicResourcesArgs:
    """DynamicResourcesArgs from its pluginConfig document (a Go duration)."""
    f = open_args(d, raw, path, NAME, ("filterTimeout",))
    timeout = f.duration("filterTimeout")
    if timeout is None:
        return DynamicResourcesArgs()
    if timeout < 0:
        # The model checks the seconds; the file's value is the duration string.
        d.invalid(f.at("filterTimeout"), f.raw("filterTimeout"), "must be zero or positive")
        return DynamicResourcesArgs()
    return build(d, path, lambda: DynamicResourcesArgs(timeout), DynamicResourcesArgs())


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.dynamic_resources import PER_NODE

    return PER_NODE


SPEC = PluginSpec(
    NAME,
    frozenset({PRE_ENQUEUE, PRE_FILTER, FILTER, POST_FILTER, SCORE, RESERVE, PRE_BIND}),
    args=DynamicResourcesArgs,
    reasons={
        NOT_ALLOCATED: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        CANNOT_ALLOCATE: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        NOT_AVAILABLE_ON_NODE: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        TIMED_OUT: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        CLAIM_IN_USE: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    },
    events=EVENTS,
    # v1.37's Score (weight 2 in its default profile); v1.34 has none, so a profile runs it
    # only by naming it at score: ``{name: DynamicResources, weight: 2}``.
    named_only=frozenset({SCORE}),
    score_channel=SCORE_CHANNEL,
    pre_filter=CLAIMS_PREFILTER,
    node_filter=NODE_FILTER,
    queueing_hint=_queueing_hint,
    args_reader=read_args,
    kernel_codes={
        CANNOT_ALLOCATE: "DRA_ALLOCATE",
        NOT_AVAILABLE_ON_NODE: "DRA_UNAVAILABLE",
        TIMED_OUT: "DRA_TIMEOUT",
    },
    per_node=_per_node,
)
