"""NodeResourcesFit: the pod's requests must fit the node's free allocatable; it scores
nodes by a strategy over the requested share of chosen resources.

Both parts are dynamic (every placement changes a node's usage) and live in the burst
kernel (``core/_place.pyx``; reason code ``REASON_FIRST_RESOURCE + column``). Here: the
args (``NodeResourcesFitArgs``, kube-scheduler v1's defaults and validation) and the
reason texts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kubesalvo.core.args_reading import ArgsDecoder, build, open_args, resources
from kubesalvo.core.label_names import qualified_name_problems
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    PRE_FILTER,
    PRE_SCORE,
    SCORE,
    ActionType,
    ClusterEvent,
    ErrorKind,
    EventResource,
    FieldError,
    HintFn,
    PerNode,
    PluginSpec,
    ResourceSpec,
    check,
)

__all__ = [
    "ERR_REASON_TOO_MANY_PODS",
    "NAME",
    "NodeResourcesFitArgs",
    "ScoringStrategy",
    "ScoringStrategyType",
    "ShapePoint",
    "insufficient_resource",
]

NAME = names.NODE_RESOURCES_FIT
ERR_REASON_TOO_MANY_PODS = "Too many pods"
_INSUFFICIENT = "Insufficient "
# RequestedToCapacityRatio shape scores are given on 0..10 and scaled by 10 (upstream
# config.MaxCustomPriorityScore).
MAX_CUSTOM_PRIORITY_SCORE = 10
_MAX_RESOURCE_WEIGHT = 100


def insufficient_resource(resource: str) -> str:
    """The reason for a resource that does not fit: "Insufficient cpu"."""
    return _INSUFFICIENT + resource


class ScoringStrategyType(StrEnum):
    """NodeResourcesFit's scoring strategies."""

    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"
    REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


@dataclass(frozen=True)
class ShapePoint:
    """A point of RequestedToCapacityRatio's curve: utilization 0..100 -> score 0..10."""

    utilization: int
    score: int


DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
_SHAPE = "scoringStrategy.requestedToCapacityRatio.shape"


def shape_problems(path: str, shape: tuple[ShapePoint, ...]) -> list[FieldError]:
    """A RequestedToCapacityRatio curve's problems: sorted utilizations, values in range."""
    if not shape:
        return [FieldError(path, ErrorKind.REQUIRED, detail="at least one point must be specified")]
    problems: list[FieldError] = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            problems.append(
                FieldError(
                    f"{path}[{i}].utilization",
                    ErrorKind.INVALID,
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            problems.append(
                FieldError(
                    f"{path}[{i}].utilization",
                    ErrorKind.INVALID,
                    point.utilization,
                    "not in valid range [0, 100]",
                )
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            problems.append(
                FieldError(
                    f"{path}[{i}].score",
                    ErrorKind.INVALID,
                    point.score,
                    f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                )
            )
    return problems


@dataclass(frozen=True)
class ScoringStrategy:
    """NodeResourcesFitArgs.scoringStrategy."""

    type: ScoringStrategyType = ScoringStrategyType.LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    # Only for RequestedToCapacityRatio; points sorted by increasing utilization.
    shape: tuple[ShapePoint, ...] = ()

    def __post_init__(self) -> None:
        check(self.problems())
        object.__setattr__(self, "type", ScoringStrategyType(self.type))

    def problems(self) -> list[FieldError]:
        """Every invalid field, with its path below the args."""
        base = "scoringStrategy"
        out: list[FieldError] = []
        if self.type not in set(ScoringStrategyType):
            out.append(
                FieldError(
                    f"{base}.type",
                    ErrorKind.UNSUPPORTED,
                    self.type,
                    accepted=tuple(t.value for t in ScoringStrategyType),
                )
            )
        for i, spec in enumerate(self.resources):
            if not 0 < spec.weight <= _MAX_RESOURCE_WEIGHT:
                out.append(
                    FieldError(
                        f"{base}.resources[{i}].weight",
                        ErrorKind.INVALID,
                        spec.weight,
                        f"resource weight of {spec.name} not in valid range (0, 100]",
                    )
                )
        if self.type == ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO:
            if not self.shape:
                out.append(
                    FieldError(
                        _SHAPE,
                        ErrorKind.REQUIRED,
                        detail="at least one point must be specified for RequestedToCapacityRatio",
                    )
                )
            else:
                out.extend(shape_problems(_SHAPE, self.shape))
        elif self.shape:
            out.append(
                FieldError(
                    _SHAPE,
                    ErrorKind.INVALID,
                    [p.utilization for p in self.shape],
                    "only allowed with type RequestedToCapacityRatio",
                )
            )
        return out


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    """NodeResourcesFitArgs."""

    # Extended resources the filter does not check (another component accounts for them),
    # in the file's order: /configz and the field paths of errors keep it.
    ignored_resources: tuple[str, ...] = ()
    # Extended-resource groups (the part before "/") the filter does not check.
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        """Every invalid field, with its path below the args (the strategy checks itself)."""
        out: list[FieldError] = []
        for i, name in enumerate(self.ignored_resources):
            for problem in qualified_name_problems(name):
                out.append(FieldError(f"ignoredResources[{i}]", ErrorKind.INVALID, name, problem))
        for i, group in enumerate(self.ignored_resource_groups):
            path = f"ignoredResourceGroups[{i}]"
            if "/" in group:
                out.append(
                    FieldError(
                        path, ErrorKind.INVALID, group, "resource group name can't contain '/'"
                    )
                )
            for problem in qualified_name_problems(group):
                out.append(FieldError(path, ErrorKind.INVALID, group, problem))
        return out

    def ignores(self, resource: str) -> bool:
        """Whether the filter leaves ``resource`` unchecked."""
        return (
            resource in self.ignored_resources
            or resource.split("/")[0] in self.ignored_resource_groups
        )


# In-place pod resize is on in v1.34, so a pod scaling down frees room as well.
EVENTS = (
    ClusterEvent(EventResource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
)
# Its reasons are "Too many pods" and one "Insufficient <resource>" per resource; their
# status code depends on the node (see core/pernode/node_resources_fit.py).


def _queueing_hint() -> HintFn:
    """Its queueing hint, which reads the per-node logic that imports this module."""
    from kubesalvo.core.pernode.node_resources_fit_hint import queueing_hint

    return queueing_hint


def read_shape(d: ArgsDecoder, raw: Any, path: str) -> tuple[ShapePoint, ...]:
    """A list of utilization/score points (requestedToCapacityRatio, VolumeBinding)."""
    points: list[ShapePoint] = []
    for item, p in d.items(raw, path):
        pf = d.fields(item, p, ("utilization", "score"))
        points.append(ShapePoint(pf.integer("utilization", 0) or 0, pf.integer("score", 0) or 0))
    return tuple(points)


def read_args(d: ArgsDecoder, raw: Any, path: str) -> NodeResourcesFitArgs:
    """NodeResourcesFitArgs from its pluginConfig document."""
    f = open_args(
        d, raw, path, NAME, ("ignoredResources", "ignoredResourceGroups", "scoringStrategy")
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
        weighted = tuple(resources(d, sf, "resources")) or DEFAULT_RESOURCES
        shape: tuple[ShapePoint, ...] = ()
        if sf.has("requestedToCapacityRatio"):
            rpath = sf.at("requestedToCapacityRatio")
            rf = d.fields(sf.raw("requestedToCapacityRatio"), rpath, ("shape",))
            shape = read_shape(d, rf.raw("shape"), rf.at("shape"))
            if not shape and stype != ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO:
                # (with that type the model itself asks for the points)
                d.fail(
                    rf.at("shape"),
                    ErrorKind.REQUIRED,
                    detail="at least one point must be specified",
                )
        strategy = build(
            d, path, lambda: ScoringStrategy(stype, weighted, shape), ScoringStrategy()
        )
    return build(
        d,
        path,
        lambda: NodeResourcesFitArgs(ignored, groups, strategy),
        NodeResourcesFitArgs(scoring_strategy=strategy),
    )


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.node_resources_fit import PER_NODE

    return PER_NODE


SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE}),
    args=NodeResourcesFitArgs,
    events=EVENTS,
    queueing_hint=_queueing_hint,
    args_reader=read_args,
    profile_field="fit",
    per_node=_per_node,
)
