"""Typed pluginConfig args, with kube-scheduler v1's defaults and validation.

One frozen dataclass per args kind (``NodeResourcesFitArgs``, ``PodTopologySpreadArgs``,
...), one decoder per kind that reads, defaults and validates it, and the registry
:data:`ARGS_DECODERS` from plugin name to decoder. A plugin without an entry takes no
args. Defaults are those of ``pkg/scheduler/apis/config/v1/defaults.go``; checks those of
``validation_pluginargs.go``, reported at the field's real path under
``profiles[i].pluginConfig[j].args``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesalvo.sched.config.affinity import NodeAffinity, decode_node_affinity
from kubesalvo.sched.config.decode import INT64_MAX, Decoder, Fields, index
from kubesalvo.sched.config.errors import ErrorKind
from kubesalvo.sched.config.labels import qualified_name_problems

__all__ = [
    "API_VERSION",
    "ARGS_DECODERS",
    "SCORING_STRATEGY_TYPES",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultPreemptionArgs",
    "DynamicResourcesArgs",
    "InterPodAffinityArgs",
    "NodeAffinityArgs",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFitArgs",
    "PluginArgs",
    "PodTopologySpreadArgs",
    "ResourceSpec",
    "ScoringStrategy",
    "TopologySpreadConstraint",
    "UtilizationShapePoint",
    "VolumeBindingArgs",
    "default_args",
]

API_VERSION = "kubescheduler.config.k8s.io/v1"
SCORING_STRATEGY_TYPES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
# A RequestedToCapacityRatio shape scores on 0..10; the plugin scales it to 0..100.
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True)
class ResourceSpec:
    name: str
    weight: int = 1


_DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True)
class UtilizationShapePoint:
    utilization: int  # percent, 0..100
    score: int  # 0..10


@dataclass(frozen=True)
class ScoringStrategy:
    type: str = "LeastAllocated"
    resources: tuple[ResourceSpec, ...] = _DEFAULT_RESOURCES
    # Only for RequestedToCapacityRatio; points sorted by utilization.
    shape: tuple[UtilizationShapePoint, ...] = ()


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = ScoringStrategy()


@dataclass(frozen=True)
class NodeResourcesBalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...] = _DEFAULT_RESOURCES


@dataclass(frozen=True)
class TopologySpreadConstraint:
    """A cluster-level default constraint; its selector is derived per pod."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    min_domains: int | None = None
    node_affinity_policy: str | None = None  # Honor (default) or Ignore
    node_taints_policy: str | None = None  # Ignore (default) or Honor
    match_label_keys: tuple[str, ...] = ()


# PodTopologySpread's built-in defaults when defaultingType is System.
SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(3, "kubernetes.io/hostname", "ScheduleAnyway"),
    TopologySpreadConstraint(5, "topology.kubernetes.io/zone", "ScheduleAnyway"),
)


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    defaulting_type: str = "System"

    @property
    def effective_default_constraints(self) -> tuple[TopologySpreadConstraint, ...]:
        """The constraints applied to pods that declare none of their own."""
        if self.defaulting_type == "System":
            return SYSTEM_DEFAULT_CONSTRAINTS
        return self.default_constraints


@dataclass(frozen=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass(frozen=True)
class NodeAffinityArgs:
    added_affinity: NodeAffinity | None = None


@dataclass(frozen=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


@dataclass(frozen=True)
class VolumeBindingArgs:
    bind_timeout_seconds: int = 600


@dataclass(frozen=True)
class DynamicResourcesArgs:
    filter_timeout_seconds: float = 10.0


PluginArgs = (
    NodeResourcesFitArgs
    | NodeResourcesBalancedAllocationArgs
    | PodTopologySpreadArgs
    | InterPodAffinityArgs
    | NodeAffinityArgs
    | DefaultPreemptionArgs
    | VolumeBindingArgs
    | DynamicResourcesArgs
)


def _fields(d: Decoder, raw: Any, path: str, plugin: str, known: tuple[str, ...]) -> Fields:
    """Open an args object; its optional apiVersion/kind must name this plugin's args."""
    f = d.fields(raw, path, ("apiVersion", "kind", *known))
    api_version = f.opt_text("apiVersion")
    if api_version is not None and api_version != API_VERSION:
        d.fail(f.at("apiVersion"), ErrorKind.UNSUPPORTED, api_version, accepted=(API_VERSION,))
    kind = f.opt_text("kind")
    if kind is not None and kind != plugin + "Args":
        d.fail(f.at("kind"), ErrorKind.UNSUPPORTED, kind, accepted=(plugin + "Args",))
    return f


def _resources(d: Decoder, f: Fields, key: str) -> list[ResourceSpec]:
    out: list[ResourceSpec] = []
    for item, p in d.items(f.raw(key), f.at(key)):
        rf = d.fields(item, p, ("name", "weight"))
        # An unset or zero weight means 1, as in kube-scheduler's defaulting.
        out.append(ResourceSpec(rf.text("name"), rf.integer("weight", 0, INT64_MAX) or 1))
    return out


def _check_resource_weights(d: Decoder, resources: list[ResourceSpec], path: str) -> None:
    for i, r in enumerate(resources):
        if not 0 < r.weight <= 100:
            d.invalid(
                f"{index(path, i)}.weight",
                r.weight,
                f"resource weight of {r.name} not in valid range (0, 100]",
            )


def _label_names(d: Decoder, names: list[str], path: str) -> None:
    for i, name in enumerate(names):
        for problem in qualified_name_problems(name):
            d.invalid(index(path, i), name, problem)


def _shape(d: Decoder, raw: Any, path: str) -> tuple[UtilizationShapePoint, ...]:
    points: list[UtilizationShapePoint] = []
    for item, p in d.items(raw, path):
        pf = d.fields(item, p, ("utilization", "score"))
        points.append(
            UtilizationShapePoint(pf.integer("utilization", 0) or 0, pf.integer("score", 0) or 0)
        )
    if not points:
        d.fail(path, ErrorKind.REQUIRED, detail="at least one point must be specified")
        return ()
    for i in range(1, len(points)):
        if points[i - 1].utilization >= points[i].utilization:
            d.invalid(
                f"{index(path, i)}.utilization",
                points[i].utilization,
                "values must be sorted in increasing order",
            )
            break
    for i, pt in enumerate(points):
        if not 0 <= pt.utilization <= 100:
            d.invalid(
                f"{index(path, i)}.utilization", pt.utilization, "not in valid range [0, 100]"
            )
        if not 0 <= pt.score <= MAX_CUSTOM_PRIORITY_SCORE:
            d.invalid(
                f"{index(path, i)}.score",
                pt.score,
                f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
            )
    return tuple(points)


def decode_node_resources_fit(d: Decoder, raw: Any, path: str) -> NodeResourcesFitArgs:
    f = _fields(
        d,
        raw,
        path,
        "NodeResourcesFit",
        ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"),
    )
    ignored = f.text_list("ignoredResources")
    _label_names(d, ignored, f.at("ignoredResources"))
    groups = f.text_list("ignoredResourceGroups")
    gpath = f.at("ignoredResourceGroups")
    for i, group in enumerate(groups):
        if "/" in group:
            d.invalid(index(gpath, i), group, "resource group name can't contain '/'")
    _label_names(d, groups, gpath)

    strategy = ScoringStrategy()
    if f.has("scoringStrategy"):
        sf = d.fields(
            f.raw("scoringStrategy"),
            f.at("scoringStrategy"),
            ("type", "resources", "requestedToCapacityRatio"),
        )
        # Inside a given scoringStrategy the type has no default, as upstream.
        stype = sf.text("type")
        if stype not in SCORING_STRATEGY_TYPES:
            d.fail(sf.at("type"), ErrorKind.UNSUPPORTED, stype, accepted=SCORING_STRATEGY_TYPES)
        resources = _resources(d, sf, "resources") or list(_DEFAULT_RESOURCES)
        _check_resource_weights(d, resources, sf.at("resources"))
        shape: tuple[UtilizationShapePoint, ...] = ()
        rpath = sf.at("requestedToCapacityRatio")
        if sf.has("requestedToCapacityRatio"):
            rf = d.fields(sf.raw("requestedToCapacityRatio"), rpath, ("shape",))
            shape = _shape(d, rf.raw("shape"), rf.at("shape"))
        elif stype == "RequestedToCapacityRatio":
            d.fail(
                f"{rpath}.shape",
                ErrorKind.REQUIRED,
                detail="at least one point must be specified for RequestedToCapacityRatio",
            )
        strategy = ScoringStrategy(stype, tuple(resources), shape)
    return NodeResourcesFitArgs(tuple(ignored), tuple(groups), strategy)


def decode_balanced_allocation(
    d: Decoder, raw: Any, path: str
) -> NodeResourcesBalancedAllocationArgs:
    f = _fields(d, raw, path, "NodeResourcesBalancedAllocation", ("resources",))
    resources = _resources(d, f, "resources") or list(_DEFAULT_RESOURCES)
    seen: set[str] = set()
    for i, r in enumerate(resources):
        rpath = index(f.at("resources"), i)
        if r.name in seen:
            d.fail(f"{rpath}.name", ErrorKind.DUPLICATE, r.name)
        seen.add(r.name)
        if r.weight != 1:
            d.invalid(f"{rpath}.weight", r.weight, "must be 1")
    return NodeResourcesBalancedAllocationArgs(tuple(resources))


_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_POLICIES = ("Honor", "Ignore")
_DEFAULTING_TYPES = ("List", "System")


def _constraint(d: Decoder, raw: Any, path: str) -> TopologySpreadConstraint:
    f = d.fields(
        raw,
        path,
        (
            "maxSkew",
            "topologyKey",
            "whenUnsatisfiable",
            "labelSelector",
            "minDomains",
            "nodeAffinityPolicy",
            "nodeTaintsPolicy",
            "matchLabelKeys",
        ),
    )
    max_skew = f.integer("maxSkew", 0) or 0
    if max_skew <= 0:
        d.invalid(f.at("maxSkew"), max_skew, "not in valid range (0, inf)")
    key = f.text("topologyKey")
    if not key:
        d.fail(f.at("topologyKey"), ErrorKind.REQUIRED, detail="can not be empty")
    for problem in qualified_name_problems(key) if key else ():
        d.invalid(f.at("topologyKey"), key, problem)
    when = f.text("whenUnsatisfiable")
    if not when:
        d.fail(f.at("whenUnsatisfiable"), ErrorKind.REQUIRED, detail="can not be empty")
    elif when not in _WHEN_UNSATISFIABLE:
        d.fail(f.at("whenUnsatisfiable"), ErrorKind.UNSUPPORTED, when, accepted=_WHEN_UNSATISFIABLE)
    if f.has("labelSelector"):
        d.fail(
            f.at("labelSelector"),
            ErrorKind.FORBIDDEN,
            detail="constraint must not define a selector, as they deduced for each pod",
        )
    min_domains = f.integer("minDomains")
    if min_domains is not None and min_domains <= 0:
        d.invalid(f.at("minDomains"), min_domains, "must be greater than 0")
    policies: list[str | None] = []
    for key_name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        policy = f.opt_text(key_name)
        if policy is not None and policy not in _POLICIES:
            d.fail(f.at(key_name), ErrorKind.UNSUPPORTED, policy, accepted=_POLICIES)
        policies.append(policy)
    match_label_keys = f.text_list("matchLabelKeys")
    _label_names(d, match_label_keys, f.at("matchLabelKeys"))
    return TopologySpreadConstraint(
        max_skew, key, when, min_domains, policies[0], policies[1], tuple(match_label_keys)
    )


def decode_pod_topology_spread(d: Decoder, raw: Any, path: str) -> PodTopologySpreadArgs:
    f = _fields(d, raw, path, "PodTopologySpread", ("defaultConstraints", "defaultingType"))
    cpath = f.at("defaultConstraints")
    constraints = [_constraint(d, c, p) for c, p in d.items(f.raw("defaultConstraints"), cpath)]
    for i, c in enumerate(constraints):
        for other in constraints[:i]:
            if (c.topology_key, c.when_unsatisfiable) == (
                other.topology_key,
                other.when_unsatisfiable,
            ):
                d.fail(
                    index(cpath, i),
                    ErrorKind.DUPLICATE,
                    f"{{{c.topology_key}, {c.when_unsatisfiable}}}",
                )
                break
    defaulting = f.text("defaultingType", "System") or "System"
    if defaulting not in _DEFAULTING_TYPES:
        d.fail(
            f.at("defaultingType"), ErrorKind.UNSUPPORTED, defaulting, accepted=_DEFAULTING_TYPES
        )
    elif defaulting == "System" and constraints:
        d.invalid(f.at("defaultingType"), defaulting, "when .defaultConstraints are not empty")
    return PodTopologySpreadArgs(tuple(constraints), defaulting)


def decode_inter_pod_affinity(d: Decoder, raw: Any, path: str) -> InterPodAffinityArgs:
    f = _fields(
        d,
        raw,
        path,
        "InterPodAffinity",
        ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"),
    )
    weight = f.integer("hardPodAffinityWeight", 1)
    assert weight is not None
    if not 0 <= weight <= 100:
        d.invalid(f.at("hardPodAffinityWeight"), weight, "not in valid range [0, 100]")
    ignore = bool(f.flag("ignorePreferredTermsOfExistingPods", False))
    return InterPodAffinityArgs(weight, ignore)


def decode_node_affinity_args(d: Decoder, raw: Any, path: str) -> NodeAffinityArgs:
    f = _fields(d, raw, path, "NodeAffinity", ("addedAffinity",))
    if not f.has("addedAffinity"):
        return NodeAffinityArgs()
    return NodeAffinityArgs(decode_node_affinity(d, f.raw("addedAffinity"), f.at("addedAffinity")))


def decode_default_preemption(d: Decoder, raw: Any, path: str) -> DefaultPreemptionArgs:
    f = _fields(
        d,
        raw,
        path,
        "DefaultPreemption",
        ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"),
    )
    pct = f.integer("minCandidateNodesPercentage", 10)
    absolute = f.integer("minCandidateNodesAbsolute", 100)
    assert pct is not None and absolute is not None
    if not 0 <= pct <= 100:
        d.invalid(f.at("minCandidateNodesPercentage"), pct, "not in valid range [0, 100]")
    if absolute < 0:
        d.invalid(f.at("minCandidateNodesAbsolute"), absolute, "not in valid range [0, inf)")
    if pct == 0 and absolute == 0:
        d.invalid(
            f.at("minCandidateNodesPercentage"),
            pct,
            "cannot be zero at the same time as minCandidateNodesAbsolute",
        )
        d.invalid(
            f.at("minCandidateNodesAbsolute"),
            absolute,
            "cannot be zero at the same time as minCandidateNodesPercentage",
        )
    return DefaultPreemptionArgs(pct, absolute)


def decode_volume_binding(d: Decoder, raw: Any, path: str) -> VolumeBindingArgs:
    f = _fields(d, raw, path, "VolumeBinding", ("bindTimeoutSeconds", "shape"))
    timeout = f.integer("bindTimeoutSeconds", 600, INT64_MAX)
    assert timeout is not None
    if timeout < 0:
        d.invalid(
            f.at("bindTimeoutSeconds"),
            timeout,
            "invalid BindTimeoutSeconds, should not be a negative value",
        )
    if f.has("shape"):
        # StorageCapacityScoring is alpha (off) in v1.34, so kube-scheduler refuses it too.
        d.invalid(
            f.at("shape"),
            f.raw("shape"),
            "unexpected field `shape`, remove it or turn on the feature gate "
            "StorageCapacityScoring",
        )
    return VolumeBindingArgs(timeout)


def decode_dynamic_resources(d: Decoder, raw: Any, path: str) -> DynamicResourcesArgs:
    f = _fields(d, raw, path, "DynamicResources", ("filterTimeout",))
    timeout = f.duration("filterTimeout")
    if timeout is None:
        return DynamicResourcesArgs()
    if timeout < 0:
        d.invalid(f.at("filterTimeout"), f.raw("filterTimeout"), "must be zero or positive")
    return DynamicResourcesArgs(timeout)


ArgsDecoder = Callable[[Decoder, Any, str], PluginArgs]

# Plugin name -> decoder of its args. A plugin not listed here takes no args.
ARGS_DECODERS: dict[str, ArgsDecoder] = {
    "DefaultPreemption": decode_default_preemption,
    "DynamicResources": decode_dynamic_resources,
    "InterPodAffinity": decode_inter_pod_affinity,
    "NodeAffinity": decode_node_affinity_args,
    "NodeResourcesBalancedAllocation": decode_balanced_allocation,
    "NodeResourcesFit": decode_node_resources_fit,
    "PodTopologySpread": decode_pod_topology_spread,
    "VolumeBinding": decode_volume_binding,
}


def default_args(plugin: str) -> PluginArgs | None:
    """The defaulted args of a plugin that has an args kind, else None."""
    decoder = ARGS_DECODERS.get(plugin)
    return None if decoder is None else decoder(Decoder(), {}, "")
