"""Plugin names, extension points, default weights and failure texts, in one place.

Everything here carries kube-scheduler v1.34's exact spelling, because users read it in
``FailedScheduling`` events and the ``PodScheduled`` condition, and tools grep for it.
kubesalvo's own plugins (QosAware, GroupPriority, Coscheduling) sit beside them.

``fit_error_message`` builds the text of a pod that fits no node exactly as upstream's
``FitError.Error()`` does: one "<count> <reason>" entry per distinct reason, sorted as
strings (so "10 ..." sorts before "9 ..."), joined by ", ", closed by a period.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum

__all__ = [
    "DEFAULT_FILTER_ORDER",
    "DEFAULT_SCORE_WEIGHTS",
    "EXTENSION_POINTS",
    "Code",
    "fit_error_message",
    "gang_reason",
    "insufficient_resource",
    "post_filter_message",
    "post_filter_text",
    "preemption_message",
    "prefilter_narrowing_reason",
    "prefilter_rejector",
    "success_message",
]

# --- kube-scheduler's plugins -------------------------------------------------------
PRIORITY_SORT = "PrioritySort"
SCHEDULING_GATES = "SchedulingGates"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
DEFAULT_PREEMPTION = "DefaultPreemption"
NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY = "ImageLocality"
DEFAULT_BINDER = "DefaultBinder"
DYNAMIC_RESOURCES = "DynamicResources"

# --- kubesalvo's plugins ------------------------------------------------------------
QOS_AWARE = "QosAware"
GROUP_PRIORITY = "GroupPriority"
COSCHEDULING = "Coscheduling"

# Extension points, with kube-scheduler's configuration field names.
PRE_ENQUEUE = "preEnqueue"
QUEUE_SORT = "queueSort"
PRE_FILTER = "preFilter"
FILTER = "filter"
POST_FILTER = "postFilter"
PRE_SCORE = "preScore"
SCORE = "score"
RESERVE = "reserve"
PERMIT = "permit"
PRE_BIND = "preBind"
BIND = "bind"
POST_BIND = "postBind"

# Which extension points each plugin implements (what "multiPoint" expands into).
EXTENSION_POINTS: dict[str, frozenset[str]] = {
    SCHEDULING_GATES: frozenset({PRE_ENQUEUE}),
    PRIORITY_SORT: frozenset({QUEUE_SORT}),
    NODE_UNSCHEDULABLE: frozenset({FILTER}),
    NODE_NAME: frozenset({FILTER}),
    TAINT_TOLERATION: frozenset({FILTER, PRE_SCORE, SCORE}),
    NODE_AFFINITY: frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE}),
    NODE_PORTS: frozenset({PRE_FILTER, FILTER}),
    NODE_RESOURCES_FIT: frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE}),
    VOLUME_RESTRICTIONS: frozenset({PRE_FILTER, FILTER}),
    NODE_VOLUME_LIMITS: frozenset({PRE_FILTER, FILTER}),
    VOLUME_BINDING: frozenset({PRE_FILTER, FILTER, RESERVE, PRE_BIND, PRE_SCORE, SCORE}),
    VOLUME_ZONE: frozenset({PRE_FILTER, FILTER}),
    POD_TOPOLOGY_SPREAD: frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE}),
    INTER_POD_AFFINITY: frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE}),
    DEFAULT_PREEMPTION: frozenset({PRE_ENQUEUE, POST_FILTER}),
    NODE_RESOURCES_BALANCED_ALLOCATION: frozenset({PRE_SCORE, SCORE}),
    IMAGE_LOCALITY: frozenset({SCORE}),
    DEFAULT_BINDER: frozenset({BIND}),
    DYNAMIC_RESOURCES: frozenset({PRE_ENQUEUE, PRE_FILTER, FILTER, POST_FILTER, RESERVE, PRE_BIND}),
    QOS_AWARE: frozenset({QUEUE_SORT, SCORE}),
    GROUP_PRIORITY: frozenset({QUEUE_SORT}),
    COSCHEDULING: frozenset({QUEUE_SORT, PRE_FILTER, PERMIT}),
}

# kube-scheduler v1.34's default multiPoint list, in its order (the order filters run in).
DEFAULT_PLUGINS: tuple[str, ...] = (
    SCHEDULING_GATES,
    PRIORITY_SORT,
    NODE_UNSCHEDULABLE,
    NODE_NAME,
    TAINT_TOLERATION,
    NODE_AFFINITY,
    NODE_PORTS,
    NODE_RESOURCES_FIT,
    VOLUME_RESTRICTIONS,
    NODE_VOLUME_LIMITS,
    VOLUME_BINDING,
    VOLUME_ZONE,
    POD_TOPOLOGY_SPREAD,
    INTER_POD_AFFINITY,
    DYNAMIC_RESOURCES,  # on by default since DynamicResourceAllocation went GA in v1.34
    DEFAULT_PREEMPTION,
    NODE_RESOURCES_BALANCED_ALLOCATION,
    IMAGE_LOCALITY,
    DEFAULT_BINDER,
)

# The filters among the defaults, in the order kube-scheduler runs them. The volume and
# DynamicResources filters only look at pods with volumes or resource claims.
DEFAULT_FILTER_ORDER: tuple[str, ...] = tuple(
    name for name in DEFAULT_PLUGINS if FILTER in EXTENSION_POINTS[name]
)

# kube-scheduler v1.34's default score weights, in its order (the multiPoint weights; a
# score plugin listed without a weight gets 1). VolumeBinding scores only with the
# StorageCapacityScoring feature, off by default, so it always adds 0.
DEFAULT_SCORE_WEIGHTS: dict[str, int] = {
    TAINT_TOLERATION: 3,
    NODE_AFFINITY: 2,
    NODE_RESOURCES_FIT: 1,
    VOLUME_BINDING: 1,
    POD_TOPOLOGY_SPREAD: 2,
    INTER_POD_AFFINITY: 2,
    NODE_RESOURCES_BALANCED_ALLOCATION: 1,
    IMAGE_LOCALITY: 1,
}

# Scores are normalised to [0, MAX_NODE_SCORE] before weighting (framework.MaxNodeScore).
MAX_NODE_SCORE = 100
# The largest weight a score plugin may be given, and the largest total weight.
MAX_PLUGIN_WEIGHT = 100
MAX_TOTAL_SCORE = (1 << 63) - 1


class Code(Enum):
    """The status code a filter failure carries; preemption only tries UNSCHEDULABLE nodes."""

    UNSCHEDULABLE = "Unschedulable"
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"


# --- failure reasons (exact texts) ---------------------------------------------------
# NodeUnschedulable
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
# NodeName
ERR_REASON_NODE_NAME = "node(s) didn't match the requested node name"
# TaintToleration. v1.34.4 no longer names the taint (a security fix, kubernetes#134740,
# backported to the 1.34 patch releases; earlier ones wrote "node(s) had untolerated
# taint {key: value}"): the taint is only logged.
ERR_REASON_UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"
# NodeAffinity
ERR_REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED_NODE_AFFINITY = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_NODE_AFFINITY_CONFLICT = "pod affinity terms conflict"
# NodePorts
ERR_REASON_NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
# NodeResourcesFit ("Insufficient <resource>" is built by insufficient_resource)
ERR_REASON_TOO_MANY_PODS = "Too many pods"
# PodTopologySpread
ERR_REASON_SPREAD_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
ERR_REASON_SPREAD_MISSING_LABEL = ERR_REASON_SPREAD_CONSTRAINTS + " (missing required label)"
# InterPodAffinity
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
# Invalid label selectors in the pod being scheduled (see core/label_selectors.py): each
# text is followed by apimachinery's error. InterPodAffinity's PreFilter rejects the pod
# (UnschedulableAndUnresolvable); the others fail the attempt with an error.
PARSING_POD = "parsing pod: "
# schedulePod's error when the snapshot has no node at all: before any plugin runs, the
# attempt fails with it (an error, not a fit error: no "0/0 nodes are available").
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"
PRESCORE_PARSING_POD = 'running PreScore plugin "InterPodAffinity": failed to parse pod: '
HARD_SPREAD_CONSTRAINTS_ERROR = (
    'running PreFilter plugin "PodTopologySpread": get constraints from pod: '
    "obtaining pod's hard topology spread constraints: "
)
SOFT_SPREAD_CONSTRAINTS_ERROR = (
    'running PreScore plugin "PodTopologySpread": calculating preScoreState: '
    "obtaining pod's soft topology spread constraints: "
)
# Coscheduling (kubesalvo): the gang could not reach its minimum, so none of it was placed.
ERR_REASON_GANG_MIN_AVAILABLE = "pod group could not reach its minAvailable"
# The post-filter part of the message. With the default profile both DynamicResources and
# DefaultPreemption run there, and their reasons are joined by ", ":
# "... 2 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/2
# nodes are available: 2 Preemption is not helpful for scheduling."
NO_NEW_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
# DynamicResources' PostFilter when its PreFilter never ran for the pod (a PreFilter
# before it answered UnschedulableAndUnresolvable, which ends the PreFilter run): reading
# its cycle state fails with the framework's ErrNotFound, an error that ends the
# PostFilter run and is its whole message.
CYCLE_STATE_NOT_FOUND = "not found"
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_PREEMPTION_VICTIMS = "No preemption victims found for incoming pod"

# The status code of each fixed reason (NodeResourcesFit decides per node, see below).
REASON_CODES: dict[str, Code] = {
    ERR_REASON_UNSCHEDULABLE: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ERR_REASON_NODE_NAME: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ERR_REASON_UNTOLERATED_TAINT: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ERR_REASON_NODE_AFFINITY: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ERR_REASON_ENFORCED_NODE_AFFINITY: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ERR_REASON_NODE_PORTS: Code.UNSCHEDULABLE,
    ERR_REASON_SPREAD_CONSTRAINTS: Code.UNSCHEDULABLE,
    ERR_REASON_SPREAD_MISSING_LABEL: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ERR_REASON_EXISTING_ANTI_AFFINITY: Code.UNSCHEDULABLE,
    ERR_REASON_AFFINITY: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ERR_REASON_ANTI_AFFINITY: Code.UNSCHEDULABLE,
    ERR_REASON_GANG_MIN_AVAILABLE: Code.UNSCHEDULABLE,
}

# The PreFilter rejections the kernel reports (as the whole filter part of the message)
# that are UnschedulableAndUnresolvable, with the plugin that answers them: they end the
# PreFilter run, so the PreFilter plugins after it never run for the pod.
PREFILTER_UNRESOLVABLE: dict[str, str] = {ERR_REASON_NODE_AFFINITY_CONFLICT: NODE_AFFINITY}


def prefilter_rejector(reason: str) -> str | None:
    """The plugin whose UnschedulableAndUnresolvable PreFilter rejection ``reason`` is
    (see PREFILTER_UNRESOLVABLE; InterPodAffinity's "parsing pod: ..." carries the
    selector's error), or None for a reason no PreFilter gives."""
    if reason.startswith(PARSING_POD):
        return INTER_POD_AFFINITY
    return PREFILTER_UNRESOLVABLE.get(reason)


NO_NODE_AVAILABLE = "0/{} nodes are available"
SUCCESSFULLY_ASSIGNED = "Successfully assigned {}/{} to {}"


def insufficient_resource(resource: str) -> str:
    """NodeResourcesFit's reason for a resource that does not fit: "Insufficient cpu"."""
    return f"Insufficient {resource}"


def prefilter_narrowing_reason(plugins: list[str] | tuple[str, ...]) -> str:
    """The reason given to nodes a PreFilter left out (e.g. NodeAffinity's metadata.name).

    Upstream writes the plugin set with Go's slice format: "[NodeAffinity]".
    """
    return f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"


def fit_error_message(
    num_nodes: int,
    reason_counts: Mapping[str, int],
    *,
    prefilter_message: str = "",
    postfilter_message: str = "",
) -> str:
    """The FailedScheduling text: "0/<n> nodes are available: <counts>. <post-filter>".

    ``reason_counts`` maps each reason to the number of nodes that gave it (a node
    rejected for two resources counts once under each). When a PreFilter rejected the
    pod, its message replaces the counts, as upstream avoids repeating it per node.
    """
    message = NO_NODE_AVAILABLE.format(num_nodes) + ":"
    if prefilter_message:
        message += f" {prefilter_message}."
    else:
        entries = sorted(f"{count} {reason}" for reason, count in reason_counts.items() if count)
        if entries:
            message += f" {', '.join(entries)}."
    if postfilter_message:
        message += f" {postfilter_message}"
    return message


def preemption_message(num_nodes: int, reason_counts: Mapping[str, int]) -> str:
    """DefaultPreemption's post-filter text when it finds no candidate.

    ``reason_counts`` are the reasons of its dry run; nodes it did not try (their
    failure was unresolvable) count under PREEMPTION_NOT_HELPFUL.
    """
    return "preemption: " + fit_error_message(num_nodes, reason_counts)


def gang_reason(group: str, placed: int, minimum: int) -> str:
    """Why a gang's pods were taken back: used as the PreFilter-style part of the message."""
    return f"{ERR_REASON_GANG_MIN_AVAILABLE} ({group}: {placed} of {minimum} placed)"


def post_filter_message(*reasons: str) -> str:
    """The PostFilter plugins' reasons as kube-scheduler joins them (Status.Message)."""
    return ", ".join(r for r in reasons if r)


def post_filter_text(
    post_filters: Sequence[str],
    *,
    has_claims: bool = False,
    preemption: str | None = None,
    dynamic_resources_state: bool = True,
) -> str:
    """The post-filter part of a FailedScheduling text, for a profile's postFilter plugins
    in their run order (RunPostFilterPlugins in kube-scheduler v1.34).

    Each plugin that answers Unschedulable adds its reasons; the first that succeeds ends
    the run, and its empty message is the whole post-filter part. DynamicResources (in
    the default profile before DefaultPreemption since DynamicResourceAllocation went GA)
    answers "no new claims to deallocate" for a pod without resource claims; for a pod
    with claims it would try to deallocate one, which kubesalvo does not model, so it
    adds nothing here. ``preemption`` is DefaultPreemption's message ("" when it chose a
    node, None when it did not run for the pod). ``dynamic_resources_state`` False: its
    PreFilter never ran (see CYCLE_STATE_NOT_FOUND).
    """
    reasons: list[str] = []
    for plugin in post_filters:
        if plugin == DYNAMIC_RESOURCES and not dynamic_resources_state:
            return CYCLE_STATE_NOT_FOUND
        if plugin == DYNAMIC_RESOURCES and not has_claims:
            reasons.append(NO_NEW_CLAIMS_TO_DEALLOCATE)
        elif plugin == DEFAULT_PREEMPTION and preemption is not None:
            if not preemption:
                return ""
            reasons.append(preemption)
    return post_filter_message(*reasons)


def success_message(namespace: str, pod: str, node: str) -> str:
    """The Scheduled event text: "Successfully assigned <ns>/<pod> to <node>"."""
    return SUCCESSFULLY_ASSIGNED.format(namespace, pod, node)
