"""The registry: every plugin kubesalvo knows, by name (kube-scheduler's registry.go).

The config loader reads which extension points a plugin implements and its args model;
the queue reads the events each plugin registered and their queueing hints
(:func:`queueing_hints`); the encoder, the failure reports and ``explain`` read the
reasons; the encoder and the reference run the static filters and scores
(``static_filter``, ``static_score``) and the score channels (``score_channel``, gathered
per profile by :func:`score_channels`); the per-node evaluator (core/pernode) runs each
plugin's per-node Filter and Score (:func:`per_node`) or else those static functions.
Adding a plugin: write its module (see any module here; ``node_name`` is the smallest
filter) and add its ``SPEC`` to ``_SPECS`` below.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType

from kubesalvo.core.plugins import (
    balanced_allocation,
    burst_packing,
    coscheduling,
    default_binder,
    default_preemption,
    dynamic_resources,
    group_priority,
    image_locality,
    inter_pod_affinity,
    names,
    node_affinity,
    node_label_preference,
    node_label_rank,
    node_name,
    node_pool,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_topology_spread,
    priority_sort,
    qos_aware,
    scheduling_gates,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)
from kubesalvo.core.plugins.framework import (
    FILTER,
    ClusterEvent,
    Code,
    HintFn,
    Normalise,
    PerNode,
    PluginSpec,
    ScoreChannel,
)

__all__ = [
    "ARGS",
    "DEFAULT_FILTER_ORDER",
    "DEFAULT_PLUGINS",
    "DEFAULT_SCORE_WEIGHTS",
    "EXTENSION_POINTS",
    "MAX_EXTRA_CHANNELS",
    "MULTI_POINT_EXPANSION",
    "PLUGINS",
    "PLUGIN_EVENTS",
    "PROFILE_FIELDS",
    "REASON_CODES",
    "REASON_PLUGIN",
    "ScoreChannelConflict",
    "per_node",
    "queueing_hints",
    "score_channels",
]

_SPECS: tuple[PluginSpec, ...] = (
    scheduling_gates.SPEC,
    priority_sort.SPEC,
    node_unschedulable.SPEC,
    node_name.SPEC,
    taint_toleration.SPEC,
    node_affinity.SPEC,
    node_ports.SPEC,
    node_resources_fit.SPEC,
    volume_restrictions.SPEC,
    node_volume_limits.SPEC,
    volume_binding.SPEC,
    volume_zone.SPEC,
    pod_topology_spread.SPEC,
    inter_pod_affinity.SPEC,
    default_preemption.SPEC,
    balanced_allocation.SPEC,
    image_locality.SPEC,
    default_binder.SPEC,
    dynamic_resources.SPEC,
    qos_aware.SPEC,
    group_priority.SPEC,
    coscheduling.SPEC,
    node_pool.SPEC,
    node_label_preference.SPEC,
    node_label_rank.SPEC,
    burst_packing.SPEC,
)

# Name -> plugin.
PLUGINS: MappingProxyType[str, PluginSpec] = MappingProxyType({s.name: s for s in _SPECS})
# Which extension points each plugin implements.
EXTENSION_POINTS: dict[str, frozenset[str]] = {s.name: s.points for s in _SPECS}
# What "multiPoint" expands each plugin into: its points but those it runs at only where
# a profile names it there (DynamicResources' v1.37 Score).
MULTI_POINT_EXPANSION: dict[str, frozenset[str]] = {s.name: s.points - s.named_only for s in _SPECS}
# Plugin -> its args model, for the plugins that take args.
ARGS: dict[str, type] = {s.name: s.args for s in _SPECS if s.args is not None}
# Plugin -> the Profile field its args are kept in, for the args the kernels read.
PROFILE_FIELDS: dict[str, str] = {s.name: s.profile_field for s in _SPECS if s.profile_field}
# Plugin -> the events after which a pod it rejected may fit (kube-scheduler v1.34, with
# queueing hints on).
PLUGIN_EVENTS: dict[str, tuple[ClusterEvent, ...]] = {s.name: s.events for s in _SPECS if s.events}


def queueing_hints() -> dict[str, HintFn]:
    """Plugin -> its queueing hint, for the plugins that have one (loaded on each call:
    the queue takes them once)."""
    return {s.name: s.queueing_hint() for s in _SPECS if s.queueing_hint is not None}


def per_node() -> dict[str, PerNode]:
    """Plugin -> its per-node Filter and Score (core/pernode), for the plugins that write
    them (loaded on each call: the per-node evaluator takes them once). The static filters,
    static scores and score channels need none: the evaluator runs their functions."""
    return {s.name: s.per_node() for s in _SPECS if s.per_node is not None}


# The status code of each fixed reason (NodeResourcesFit decides per node).
REASON_CODES: dict[str, Code] = {r: c for s in _SPECS for r, c in s.reasons.items()}
# Fixed reason text -> the plugin that gives it.
REASON_PLUGIN: dict[str, str] = {r: s.name for s in _SPECS for r in s.reasons}

# kube-scheduler v1.34's default multiPoint list, in its order (the order filters run in).
DEFAULT_PLUGINS: tuple[str, ...] = (
    names.SCHEDULING_GATES,
    names.PRIORITY_SORT,
    names.NODE_UNSCHEDULABLE,
    names.NODE_NAME,
    names.TAINT_TOLERATION,
    names.NODE_AFFINITY,
    names.NODE_PORTS,
    names.NODE_RESOURCES_FIT,
    names.VOLUME_RESTRICTIONS,
    names.NODE_VOLUME_LIMITS,
    names.VOLUME_BINDING,
    names.VOLUME_ZONE,
    names.POD_TOPOLOGY_SPREAD,
    names.INTER_POD_AFFINITY,
    names.DYNAMIC_RESOURCES,  # on by default since DynamicResourceAllocation went GA in v1.34
    names.DEFAULT_PREEMPTION,
    names.NODE_RESOURCES_BALANCED_ALLOCATION,
    names.IMAGE_LOCALITY,
    names.DEFAULT_BINDER,
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
    names.TAINT_TOLERATION: 3,
    names.NODE_AFFINITY: 2,
    names.NODE_RESOURCES_FIT: 1,
    names.VOLUME_BINDING: 1,
    names.POD_TOPOLOGY_SPREAD: 2,
    names.INTER_POD_AFFINITY: 2,
    names.NODE_RESOURCES_BALANCED_ALLOCATION: 1,
    names.IMAGE_LOCALITY: 1,
}


# The normalised channels a profile may score beyond the first of each kind (the kernel's
# extra channels, KS_EXTRA in core/_scan.h).
MAX_EXTRA_CHANNELS = 8


class ScoreChannelConflict(ValueError):
    """More normalised score channels than the kernel takes."""


def score_channels(
    scores: Iterable[tuple[str, int]],
) -> list[tuple[str, ScoreChannel, int]]:
    """The score channels of a profile's enabled score plugins, in the profile's order:
    (plugin, channel, weight).

    The kernel takes the first MAX and the first REVERSE_MAX channel in lanes of their own
    (its fast paths) and up to :data:`MAX_EXTRA_CHANNELS` further normalised ones; more
    raise :class:`ScoreChannelConflict` naming them (the profile is refused at start).
    NONE channels are summed into the fixed scores, any number of them.
    """
    out: list[tuple[str, ScoreChannel, int]] = []
    kinds: set[Normalise] = set()
    extra: list[str] = []
    for name, weight in scores:
        channel = PLUGINS[name].score_channel
        if channel is None or not weight:
            continue
        if channel.normalise is not Normalise.NONE:
            if channel.normalise in kinds:
                extra.append(name)
            kinds.add(channel.normalise)
        out.append((name, channel, weight))
    if len(extra) > MAX_EXTRA_CHANNELS:
        raise ScoreChannelConflict(
            f"score plugins {extra}: at most {MAX_EXTRA_CHANNELS} normalised scores beyond "
            "the first of each normalisation kind"
        )
    return out
