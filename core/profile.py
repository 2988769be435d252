"""A scheduling profile: which filters and scores run, their weights and their args.

This is the already-defaulted, validated form of one ``KubeSchedulerProfile`` of a
``KubeSchedulerConfiguration`` (the config loader in ``sched`` builds it from YAML).
The args mirror kube-scheduler v1.34's plugin args with the same defaults and the same
validation rules; an invalid value raises :class:`ProfileError` naming the field path
below ``pluginConfig[<plugin>].args`` and the accepted values.

``Profile.default()`` is kube-scheduler v1.34's default profile (the default plugin set,
weights and args), under kubesalvo's default scheduler name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kubesalvo.core import names

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "BalancedAllocationArgs",
    "DefaultConstraint",
    "FitArgs",
    "InterPodAffinityArgs",
    "NodeAffinityArgs",
    "Profile",
    "ProfileError",
    "ResourceSpec",
    "ScoringStrategy",
    "ScoringStrategyType",
    "ShapePoint",
    "SpreadArgs",
    "SpreadDefaulting",
]

DEFAULT_SCHEDULER_NAME = "kubesalvo"
# RequestedToCapacityRatio shape scores are given on 0..10 and scaled by 10 (upstream
# config.MaxCustomPriorityScore).
MAX_CUSTOM_PRIORITY_SCORE = 10
_MAX_RESOURCE_WEIGHT = 100
_MAX_HARD_POD_AFFINITY_WEIGHT = 100
_LABEL_NAME = re.compile(
    r"^(([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$"
)


class ProfileError(ValueError):
    """An invalid profile value; ``path`` is where it sits in the configuration."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


def _check_label_name(path: str, value: str) -> None:
    prefix, _, name = value.rpartition("/")
    if not _LABEL_NAME.match(value) or len(name) > 63 or len(prefix) > 253:
        raise ProfileError(path, f"Invalid value: {value!r}: not a qualified name")


class ScoringStrategyType(StrEnum):
    """NodeResourcesFit's scoring strategies."""

    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"
    REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"


@dataclass(frozen=True)
class ResourceSpec:
    """A resource a score looks at, with its weight."""

    name: str
    weight: int = 1


@dataclass(frozen=True)
class ShapePoint:
    """A point of RequestedToCapacityRatio's curve: utilization 0..100 -> score 0..10."""

    utilization: int
    score: int


_DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True)
class ScoringStrategy:
    """NodeResourcesFitArgs.scoringStrategy."""

    type: ScoringStrategyType = ScoringStrategyType.LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = _DEFAULT_RESOURCES
    # Only for RequestedToCapacityRatio; points sorted by increasing utilization.
    shape: tuple[ShapePoint, ...] = ()

    def __post_init__(self) -> None:
        base = "scoringStrategy"
        if self.type not in set(ScoringStrategyType):
            accepted = [t.value for t in ScoringStrategyType]
            raise ProfileError(
                f"{base}.type", f"Unsupported value: {self.type!r}: supported values: {accepted}"
            )
        object.__setattr__(self, "type", ScoringStrategyType(self.type))
        for i, spec in enumerate(self.resources):
            if not 0 < spec.weight <= _MAX_RESOURCE_WEIGHT:
                raise ProfileError(
                    f"{base}.resources[{i}].weight",
                    f"Invalid value: {spec.weight}: "
                    f"resource weight of {spec.name} not in valid range (0, 100]",
                )
        if self.type is ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO:
            _check_shape(f"{base}.shape", self.shape)
        elif self.shape:
            raise ProfileError(f"{base}.shape", "only allowed with type RequestedToCapacityRatio")


def _check_shape(path: str, shape: tuple[ShapePoint, ...]) -> None:
    if not shape:
        raise ProfileError(path, "Required value: at least one point must be specified")
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            raise ProfileError(
                f"{path}[{i}].utilization",
                f"Invalid value: {shape[i].utilization}: values must be sorted in increasing order",
            )
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= 100:
            raise ProfileError(
                f"{path}[{i}].utilization",
                f"Invalid value: {point.utilization}: not in valid range [0, 100]",
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ProfileError(
                f"{path}[{i}].score", f"Invalid value: {point.score}: not in valid range [0, 10]"
            )


@dataclass(frozen=True)
class FitArgs:
    """NodeResourcesFitArgs."""

    # Extended resources the filter does not check (another component accounts for them).
    ignored_resources: frozenset[str] = frozenset()
    # Extended-resource groups (the part before "/") the filter does not check.
    ignored_resource_groups: frozenset[str] = frozenset()
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)

    def __post_init__(self) -> None:
        for i, name in enumerate(sorted(self.ignored_resources)):
            _check_label_name(f"ignoredResources[{i}]", name)
        for i, group in enumerate(sorted(self.ignored_resource_groups)):
            if "/" in group:
                raise ProfileError(
                    f"ignoredResourceGroups[{i}]",
                    f"Invalid value: {group!r}: resource group name can't contain '/'",
                )
            _check_label_name(f"ignoredResourceGroups[{i}]", group)


@dataclass(frozen=True)
class BalancedAllocationArgs:
    """NodeResourcesBalancedAllocationArgs: every weight must be 1."""

    resources: tuple[ResourceSpec, ...] = _DEFAULT_RESOURCES

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for i, spec in enumerate(self.resources):
            if spec.name in seen:
                raise ProfileError(f"resources[{i}].name", f"Duplicate value: {spec.name!r}")
            seen.add(spec.name)
            if spec.weight != 1:
                raise ProfileError(
                    f"resources[{i}].weight", f"Invalid value: {spec.weight}: must be 1"
                )


class SpreadDefaulting(StrEnum):
    """PodTopologySpreadArgs.defaultingType."""

    SYSTEM = "System"
    LIST = "List"


@dataclass(frozen=True)
class DefaultConstraint:
    """A default topology spread constraint (its selector comes from the pod's owners)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # "DoNotSchedule" or "ScheduleAnyway"


# Used when defaultingType is System: soft spreading over hosts and zones.
SYSTEM_DEFAULT_CONSTRAINTS: tuple[DefaultConstraint, ...] = (
    DefaultConstraint(3, "kubernetes.io/hostname", "ScheduleAnyway"),
    DefaultConstraint(5, "topology.kubernetes.io/zone", "ScheduleAnyway"),
)


@dataclass(frozen=True)
class SpreadArgs:
    """PodTopologySpreadArgs."""

    default_constraints: tuple[DefaultConstraint, ...] = ()
    defaulting_type: SpreadDefaulting = SpreadDefaulting.SYSTEM

    def __post_init__(self) -> None:
        if self.defaulting_type not in set(SpreadDefaulting):
            raise ProfileError(
                "defaultingType",
                f'Unsupported value: {self.defaulting_type!r}: supported values: "System", "List"',
            )
        object.__setattr__(self, "defaulting_type", SpreadDefaulting(self.defaulting_type))
        if self.defaulting_type is SpreadDefaulting.SYSTEM and self.default_constraints:
            raise ProfileError(
                "defaultingType", 'Invalid value: "System": when .defaultConstraints are not empty'
            )
        for i, c in enumerate(self.default_constraints):
            path = f"defaultConstraints[{i}]"
            if c.max_skew <= 0:
                raise ProfileError(
                    f"{path}.maxSkew", f"Invalid value: {c.max_skew}: not in valid range (0, inf)"
                )
            if not c.topology_key:
                raise ProfileError(f"{path}.topologyKey", "Required value: can not be empty")
            _check_label_name(f"{path}.topologyKey", c.topology_key)
            if c.when_unsatisfiable not in ("DoNotSchedule", "ScheduleAnyway"):
                raise ProfileError(
                    f"{path}.whenUnsatisfiable",
                    f"Unsupported value: {c.when_unsatisfiable!r}: "
                    'supported values: "DoNotSchedule", "ScheduleAnyway"',
                )
            for other in self.default_constraints[:i]:
                if (other.topology_key, other.when_unsatisfiable) == (
                    c.topology_key,
                    c.when_unsatisfiable,
                ):
                    raise ProfileError(
                        path, f"Duplicate value: {{{c.topology_key}, {c.when_unsatisfiable}}}"
                    )

    @property
    def effective_constraints(self) -> tuple[DefaultConstraint, ...]:
        """The constraints applied to a pod that declares none."""
        if self.defaulting_type is SpreadDefaulting.SYSTEM:
            return SYSTEM_DEFAULT_CONSTRAINTS
        return self.default_constraints


@dataclass(frozen=True)
class InterPodAffinityArgs:
    """InterPodAffinityArgs."""

    # The score an existing pod's *required* affinity term adds when the incoming pod
    # matches it (0 turns this off).
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.hard_pod_affinity_weight <= _MAX_HARD_POD_AFFINITY_WEIGHT:
            raise ProfileError(
                "hardPodAffinityWeight",
                f"Invalid value: {self.hard_pod_affinity_weight}: not in valid range [0, 100]",
            )


@dataclass(frozen=True)
class NodeAffinityArgs:
    """NodeAffinityArgs: a node affinity (API shape) added to every pod of the profile."""

    added_affinity: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        # Imported here: the selector rules live with the reference, which imports this module.
        from kubesalvo.core.reference.selectors import (
            InvalidSelector,
            node_selector_terms,
            preferred_terms,
        )

        if not self.added_affinity:
            return
        base = "addedAffinity"
        required = self.added_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            for i, raw in enumerate(required.get("nodeSelectorTerms") or ()):
                parsed = node_selector_terms({"nodeSelectorTerms": [raw]})
                term = parsed[0] if parsed else None
                if term is not None and not term.valid:
                    raise ProfileError(
                        f"{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]",
                        f"Invalid value: {term.error}",
                    )
        preferred = self.added_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
        try:
            preferred_terms(preferred or ())
        except InvalidSelector as err:
            raise ProfileError(
                f"{base}.preferredDuringSchedulingIgnoredDuringExecution", f"Invalid value: {err}"
            ) from err


@dataclass(frozen=True)
class Profile:
    """One validated scheduling profile.

    ``filters`` run in the given order; a node's failure reasons are those of the first
    filter that rejects it, as in kube-scheduler. ``scores`` map each enabled score
    plugin to its weight (1..; the weighted sum of all plugins must fit int64).
    """

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    filters: tuple[str, ...] = names.DEFAULT_FILTER_ORDER
    scores: tuple[tuple[str, int], ...] = tuple(names.DEFAULT_SCORE_WEIGHTS.items())
    fit: FitArgs = field(default_factory=FitArgs)
    balanced_allocation: BalancedAllocationArgs = field(default_factory=BalancedAllocationArgs)
    spread: SpreadArgs = field(default_factory=SpreadArgs)
    inter_pod_affinity: InterPodAffinityArgs = field(default_factory=InterPodAffinityArgs)
    node_affinity: NodeAffinityArgs = field(default_factory=NodeAffinityArgs)

    def __post_init__(self) -> None:
        if not self.scheduler_name:
            raise ProfileError("schedulerName", "Required value")
        for i, name in enumerate(self.filters):
            if names.FILTER not in names.EXTENSION_POINTS.get(name, frozenset()):
                raise ProfileError(
                    f"plugins.filter.enabled[{i}]", _not_a_plugin(name, names.FILTER)
                )
        if len(set(self.filters)) != len(self.filters):
            raise ProfileError("plugins.filter.enabled", "Duplicate plugin")
        total = 0
        seen: set[str] = set()
        for i, (name, weight) in enumerate(self.scores):
            path = f"plugins.score.enabled[{i}]"
            if names.SCORE not in names.EXTENSION_POINTS.get(name, frozenset()):
                raise ProfileError(f"{path}.name", _not_a_plugin(name, names.SCORE))
            if name in seen:
                raise ProfileError(f"{path}.name", f"Duplicate value: {name!r}")
            seen.add(name)
            if weight < 1:
                raise ProfileError(f"{path}.weight", f"Invalid value: {weight}: must be at least 1")
            total += weight * names.MAX_NODE_SCORE
            if total > names.MAX_TOTAL_SCORE:
                raise ProfileError(f"{path}.weight", "total score of Score plugins could overflow")

    @classmethod
    def default(cls, scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> Profile:
        """kube-scheduler v1.34's default profile under ``scheduler_name``."""
        return cls(scheduler_name=scheduler_name)

    @property
    def score_weights(self) -> dict[str, int]:
        """Enabled score plugins and their weights."""
        return dict(self.scores)


def _not_a_plugin(name: str, point: str) -> str:
    accepted = sorted(p for p, points in names.EXTENSION_POINTS.items() if point in points)
    return f"Unsupported value: {name!r}: supported values: {accepted}"
