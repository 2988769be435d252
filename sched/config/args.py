"""Reading pluginConfig args: from the YAML of ``pluginConfig[j].args`` to the plugins'
own args models.

The models, with kube-scheduler v1's defaults and validation rules, live with their
plugins (``core/plugins/<plugin>.py``, listed in the registry's ``ARGS``). Here each args
kind has a reader that checks the document's shape (known fields, types, the optional
``apiVersion``/``kind``), builds the model, and reports every problem the model finds
with itself at its real path under ``profiles[i].pluginConfig[j].args``.
:data:`ARGS_DECODERS` maps plugin names to readers; a plugin without an entry takes no
args.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

from kubesalvo.core.plugins import names, registry
from kubesalvo.core.plugins.balanced_allocation import NodeResourcesBalancedAllocationArgs
from kubesalvo.core.plugins.default_preemption import DefaultPreemptionArgs
from kubesalvo.core.plugins.dynamic_resources import DynamicResourcesArgs
from kubesalvo.core.plugins.framework import ArgsError, ResourceSpec
from kubesalvo.core.plugins.inter_pod_affinity import InterPodAffinityArgs
from kubesalvo.core.plugins.node_affinity import NodeAffinityArgs
from kubesalvo.core.plugins.node_resources_fit import (
    DEFAULT_RESOURCES,
    NodeResourcesFitArgs,
    ScoringStrategy,
    ScoringStrategyType,
    ShapePoint,
)
from kubesalvo.core.plugins.pod_topology_spread import DefaultConstraint, PodTopologySpreadArgs
from kubesalvo.core.plugins.volume_binding import DEFAULT_SHAPE, VolumeBindingArgs
from kubesalvo.sched.config.affinity import decode_node_affinity, node_affinity_to_api
from kubesalvo.sched.config.decode import INT64_MAX, Decoder, Fields
from kubesalvo.sched.config.errors import ErrorKind
from kubesalvo.sched.config.gates import FeatureGates

__all__ = ["API_VERSION", "ARGS_DECODERS", "PluginArgs", "default_args"]

API_VERSION = "kubescheduler.config.k8s.io/v1"

# One of the plugins' args models (registry.ARGS).
PluginArgs: TypeAlias = object
A = TypeVar("A")


def _build(d: Decoder, path: str, make: Callable[[], A], default: A) -> A:
    """The model ``make`` builds, or, when it refuses itself, ``default`` with every
    problem it found reported below ``path``."""
    try:
        return make()
    except ArgsError as err:
        for problem in err.problems:
            d.errors.append(problem.under(path))
        return default


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


def _shape(d: Decoder, raw: Any, path: str) -> tuple[ShapePoint, ...]:
    points: list[ShapePoint] = []
    for item, p in d.items(raw, path):
        pf = d.fields(item, p, ("utilization", "score"))
        points.append(ShapePoint(pf.integer("utilization", 0) or 0, pf.integer("score", 0) or 0))
    return tuple(points)


def decode_node_resources_fit(d: Decoder, raw: Any, path: str) -> NodeResourcesFitArgs:
    f = _fields(
        d,
        raw,
        path,
        names.NODE_RESOURCES_FIT,
        ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"),
    )
    ignored = tuple(f.text_list("ignoredResources"))
    groups = tuple(f.text_list("ignoredResourceGroups"))
    strategy = ScoringStrategy()
    if f.has("scoringStrategy"):
        spath = f.at("scoringStrategy")
        sf = d.fields(
            f.raw("scoringStrategy"), spath, ("type", "resources", "requestedToCapacityRatio")
        )
        # Inside a given scoringStrategy the type has no default, as upstream.
        stype: Any = sf.text("type")
        resources = tuple(_resources(d, sf, "resources")) or DEFAULT_RESOURCES
        shape: tuple[ShapePoint, ...] = ()
        if sf.has("requestedToCapacityRatio"):
            rpath = sf.at("requestedToCapacityRatio")
            rf = d.fields(sf.raw("requestedToCapacityRatio"), rpath, ("shape",))
            shape = _shape(d, rf.raw("shape"), rf.at("shape"))
            if not shape and stype != ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO:
                # (with that type the model itself asks for the points)
                d.fail(
                    rf.at("shape"),
                    ErrorKind.REQUIRED,
                    detail="at least one point must be specified",
                )
        strategy = _build(
            d, path, lambda: ScoringStrategy(stype, resources, shape), ScoringStrategy()
        )
    return _build(
        d,
        path,
        lambda: NodeResourcesFitArgs(ignored, groups, strategy),
        NodeResourcesFitArgs(scoring_strategy=strategy),
    )


def decode_balanced_allocation(
    d: Decoder, raw: Any, path: str
) -> NodeResourcesBalancedAllocationArgs:
    f = _fields(d, raw, path, names.NODE_RESOURCES_BALANCED_ALLOCATION, ("resources",))
    resources = tuple(_resources(d, f, "resources")) or DEFAULT_RESOURCES
    return _build(
        d,
        path,
        lambda: NodeResourcesBalancedAllocationArgs(resources),
        NodeResourcesBalancedAllocationArgs(),
    )


def _constraint(d: Decoder, raw: Any, path: str) -> DefaultConstraint:
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
    if f.has("labelSelector"):
        d.fail(
            f.at("labelSelector"),
            ErrorKind.FORBIDDEN,
            detail="constraint must not define a selector, as they deduced for each pod",
        )
    return DefaultConstraint(
        f.integer("maxSkew", 0) or 0,
        f.text("topologyKey"),
        f.text("whenUnsatisfiable"),
        f.integer("minDomains"),
        f.opt_text("nodeAffinityPolicy"),
        f.opt_text("nodeTaintsPolicy"),
        tuple(f.text_list("matchLabelKeys")),
    )


def decode_pod_topology_spread(d: Decoder, raw: Any, path: str) -> PodTopologySpreadArgs:
    f = _fields(d, raw, path, names.POD_TOPOLOGY_SPREAD, ("defaultConstraints", "defaultingType"))
    cpath = f.at("defaultConstraints")
    constraints = tuple(
        _constraint(d, c, p) for c, p in d.items(f.raw("defaultConstraints"), cpath)
    )
    defaulting: Any = f.text("defaultingType", "System") or "System"
    return _build(
        d,
        path,
        lambda: PodTopologySpreadArgs(constraints, defaulting),
        PodTopologySpreadArgs(),
    )


def decode_inter_pod_affinity(d: Decoder, raw: Any, path: str) -> InterPodAffinityArgs:
    f = _fields(
        d,
        raw,
        path,
        names.INTER_POD_AFFINITY,
        ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"),
    )
    weight = f.integer("hardPodAffinityWeight", 1)
    assert weight is not None
    ignore = bool(f.flag("ignorePreferredTermsOfExistingPods", False))
    return _build(d, path, lambda: InterPodAffinityArgs(weight, ignore), InterPodAffinityArgs())


def decode_node_affinity_args(d: Decoder, raw: Any, path: str) -> NodeAffinityArgs:
    f = _fields(d, raw, path, names.NODE_AFFINITY, ("addedAffinity",))
    if not f.has("addedAffinity"):
        return NodeAffinityArgs()
    errors = len(d.errors)
    added = decode_node_affinity(d, f.raw("addedAffinity"), f.at("addedAffinity"))
    if len(d.errors) > errors:
        return NodeAffinityArgs()
    return _build(
        d, path, lambda: NodeAffinityArgs(node_affinity_to_api(added)), NodeAffinityArgs()
    )


def decode_default_preemption(d: Decoder, raw: Any, path: str) -> DefaultPreemptionArgs:
    f = _fields(
        d,
        raw,
        path,
        names.DEFAULT_PREEMPTION,
        ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"),
    )
    pct = f.integer("minCandidateNodesPercentage", 10)
    absolute = f.integer("minCandidateNodesAbsolute", 100)
    assert pct is not None and absolute is not None
    return _build(d, path, lambda: DefaultPreemptionArgs(pct, absolute), DefaultPreemptionArgs())


def decode_volume_binding(d: Decoder, raw: Any, path: str) -> VolumeBindingArgs:
    f = _fields(d, raw, path, names.VOLUME_BINDING, ("bindTimeoutSeconds", "shape"))
    timeout = f.integer("bindTimeoutSeconds", 600, INT64_MAX)
    assert timeout is not None
    shape: tuple[ShapePoint, ...] = ()
    if not d.gates.storage_capacity_scoring:
        if f.has("shape") and f.raw("shape") is not None:
            # Off (v1.34's default): kube-scheduler refuses it, so that it cannot take
            # effect unseen the day the gate turns on.
            d.invalid(
                f.at("shape"),
                f.raw("shape"),
                "unexpected field `shape`, remove it or turn on the feature gate "
                "StorageCapacityScoring",
            )
    else:
        # On: an empty or missing shape takes upstream's default, then the model
        # validates it as ValidateVolumeBindingArgs does.
        shape = _shape(d, f.raw("shape"), f.at("shape")) or DEFAULT_SHAPE
    return _build(d, path, lambda: VolumeBindingArgs(timeout, shape), VolumeBindingArgs())


def decode_dynamic_resources(d: Decoder, raw: Any, path: str) -> DynamicResourcesArgs:
    f = _fields(d, raw, path, names.DYNAMIC_RESOURCES, ("filterTimeout",))
    timeout = f.duration("filterTimeout")
    if timeout is None:
        return DynamicResourcesArgs()
    if timeout < 0:
        # The model checks the seconds; the file's value is the duration string.
        d.invalid(f.at("filterTimeout"), f.raw("filterTimeout"), "must be zero or positive")
        return DynamicResourcesArgs()
    return _build(d, path, lambda: DynamicResourcesArgs(timeout), DynamicResourcesArgs())


def _reader(plugin: str, model: type) -> Callable[[Decoder, Any, str], Any]:
    """A reader for a plugin's args model whose fields are all plain values (text, integer,
    number, flag, a list of texts held as a tuple): each field is read under its camelCase
    name, e.g. ``label`` or ``bindTimeoutSeconds``. New plugins get one without a line
    here."""
    kinds = {f.name: f.type for f in dataclasses.fields(model)}
    # A model may spell a field's key itself (``defaultSLO``, not ``defaultSlo``).
    spelled = getattr(model, "FIELD_KEYS", {})
    keys = {spelled.get(name) or _camel(name): name for name in kinds}

    def read(d: Decoder, raw: Any, path: str) -> Any:
        f = _fields(d, raw, path, plugin, tuple(keys))
        values: dict[str, Any] = {}
        for key, name in keys.items():
            if not f.has(key):
                continue
            kind = getattr(kinds[name], "__name__", str(kinds[name]))
            if kind == "str":
                values[name] = f.text(key)
            elif kind == "int":
                values[name] = f.integer(key, maximum=INT64_MAX)
            elif kind == "float":
                values[name] = f.number(key, 0.0)
            elif kind == "bool":
                values[name] = f.flag(key)
            elif kind == "tuple[str, ...]":
                values[name] = tuple(f.text_list(key))
        values = {k: v for k, v in values.items() if v is not None}
        return _build(d, path, lambda: model(**values), model())

    return read


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)


# Plugin name -> reader of its args: kube-scheduler's args kinds have their own (their
# fields nest, and some defaulting is the file's, not the model's); every other plugin
# with an args model of plain values gets the generic reader. A plugin not listed takes
# no args.
ARGS_DECODERS: dict[str, Callable[[Decoder, Any, str], Any]] = {
    names.DEFAULT_PREEMPTION: decode_default_preemption,
    names.DYNAMIC_RESOURCES: decode_dynamic_resources,
    names.INTER_POD_AFFINITY: decode_inter_pod_affinity,
    names.NODE_AFFINITY: decode_node_affinity_args,
    names.NODE_RESOURCES_BALANCED_ALLOCATION: decode_balanced_allocation,
    names.NODE_RESOURCES_FIT: decode_node_resources_fit,
    names.POD_TOPOLOGY_SPREAD: decode_pod_topology_spread,
    names.VOLUME_BINDING: decode_volume_binding,
}
for _plugin, _model in registry.ARGS.items():
    ARGS_DECODERS.setdefault(_plugin, _reader(_plugin, _model))


def default_args(plugin: str, gates: FeatureGates | None = None) -> Any:
    """The defaulted args of a plugin that has an args kind, else None."""
    decoder = ARGS_DECODERS.get(plugin)
    return None if decoder is None else decoder(Decoder(gates), {}, "")
