"""PodTopologySpread: pods spread over topology domains within a maximum skew.

Hard constraints (DoNotSchedule) filter and soft ones (ScheduleAnyway) score; both depend
on the pods placed so far, so the counting is in the burst kernel (``core/spread.py``
encodes the constraints; reason codes 8 and 9). Pods that declare no constraint get the
default ones of the args (the System defaults unless ``defaultingType: List``), with a
selector derived from the pod's owners (``sched/informers/workloads.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kubesalvo.core.args_reading import ArgsDecoder, build, open_args
from kubesalvo.core.label_names import qualified_name_problems
from kubesalvo.core.label_selectors import spread_constraint_error
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    PRE_FILTER,
    PRE_SCORE,
    SCORE,
    ActionType,
    ClusterEvent,
    Code,
    ErrorKind,
    EventResource,
    FieldError,
    HintFn,
    NodeTable,
    ParsedPodClass,
    PerNode,
    PluginSpec,
    PreFilter,
    PreFilterResult,
    PreScore,
    check,
)

__all__ = [
    "ERR_REASON_SPREAD_CONSTRAINTS",
    "ERR_REASON_SPREAD_MISSING_LABEL",
    "NAME",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "DefaultConstraint",
    "PodTopologySpreadArgs",
    "SpreadDefaulting",
]

NAME = names.POD_TOPOLOGY_SPREAD
ERR_REASON_SPREAD_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
ERR_REASON_SPREAD_MISSING_LABEL = ERR_REASON_SPREAD_CONSTRAINTS + " (missing required label)"
# A pod's own constraint with an invalid labelSelector fails the attempt with an error:
# at PreFilter for DoNotSchedule constraints, at PreScore for ScheduleAnyway ones.
HARD_SPREAD_CONSTRAINTS_ERROR = (
    'running PreFilter plugin "PodTopologySpread": get constraints from pod: '
    "obtaining pod's hard topology spread constraints: "
)
SOFT_SPREAD_CONSTRAINTS_ERROR = (
    'running PreScore plugin "PodTopologySpread": calculating preScoreState: '
    "obtaining pod's soft topology spread constraints: "
)

WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
POLICIES = ("Honor", "Ignore")


class SpreadDefaulting(StrEnum):
    """PodTopologySpreadArgs.defaultingType."""

    LIST = "List"
    SYSTEM = "System"


@dataclass(frozen=True)
class DefaultConstraint:
    """A default topology spread constraint; its selector is derived per pod."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # "DoNotSchedule" or "ScheduleAnyway"
    min_domains: int | None = None
    node_affinity_policy: str | None = None  # Honor (default) or Ignore
    node_taints_policy: str | None = None  # Ignore (default) or Honor
    match_label_keys: tuple[str, ...] = ()

    def problems(self, path: str) -> list[FieldError]:
        out: list[FieldError] = []
        if self.max_skew <= 0:
            out.append(
                FieldError(
                    f"{path}.maxSkew",
                    ErrorKind.INVALID,
                    self.max_skew,
                    "not in valid range (0, inf)",
                )
            )
        key = self.topology_key
        if not key:
            out.append(
                FieldError(f"{path}.topologyKey", ErrorKind.REQUIRED, detail="can not be empty")
            )
        for problem in qualified_name_problems(key) if key else ():
            out.append(FieldError(f"{path}.topologyKey", ErrorKind.INVALID, key, problem))
        when = self.when_unsatisfiable
        if not when:
            out.append(
                FieldError(
                    f"{path}.whenUnsatisfiable", ErrorKind.REQUIRED, detail="can not be empty"
                )
            )
        elif when not in WHEN_UNSATISFIABLE:
            out.append(
                FieldError(
                    f"{path}.whenUnsatisfiable",
                    ErrorKind.UNSUPPORTED,
                    when,
                    accepted=WHEN_UNSATISFIABLE,
                )
            )
        if self.min_domains is not None and self.min_domains <= 0:
            out.append(
                FieldError(
                    f"{path}.minDomains",
                    ErrorKind.INVALID,
                    self.min_domains,
                    "must be greater than 0",
                )
            )
        for key_name, policy in (
            ("nodeAffinityPolicy", self.node_affinity_policy),
            ("nodeTaintsPolicy", self.node_taints_policy),
        ):
            if policy is not None and policy not in POLICIES:
                out.append(
                    FieldError(
                        f"{path}.{key_name}", ErrorKind.UNSUPPORTED, policy, accepted=POLICIES
                    )
                )
        for i, label in enumerate(self.match_label_keys):
            for problem in qualified_name_problems(label):
                out.append(
                    FieldError(f"{path}.matchLabelKeys[{i}]", ErrorKind.INVALID, label, problem)
                )
        return out


# Used when defaultingType is System: soft spreading over hosts and zones.
SYSTEM_DEFAULT_CONSTRAINTS: tuple[DefaultConstraint, ...] = (
    DefaultConstraint(3, "kubernetes.io/hostname", "ScheduleAnyway"),
    DefaultConstraint(5, "topology.kubernetes.io/zone", "ScheduleAnyway"),
)


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    """PodTopologySpreadArgs."""

    default_constraints: tuple[DefaultConstraint, ...] = ()
    defaulting_type: SpreadDefaulting = SpreadDefaulting.SYSTEM

    def __post_init__(self) -> None:
        check(self.problems())
        object.__setattr__(self, "defaulting_type", SpreadDefaulting(self.defaulting_type))

    def problems(self) -> list[FieldError]:
        out: list[FieldError] = []
        for i, c in enumerate(self.default_constraints):
            out.extend(c.problems(f"defaultConstraints[{i}]"))
        for i, c in enumerate(self.default_constraints):
            for other in self.default_constraints[:i]:
                if (other.topology_key, other.when_unsatisfiable) == (
                    c.topology_key,
                    c.when_unsatisfiable,
                ):
                    out.append(
                        FieldError(
                            f"defaultConstraints[{i}]",
                            ErrorKind.DUPLICATE,
                            f"{{{c.topology_key}, {c.when_unsatisfiable}}}",
                        )
                    )
                    break
        if self.defaulting_type not in set(SpreadDefaulting):
            out.append(
                FieldError(
                    "defaultingType",
                    ErrorKind.UNSUPPORTED,
                    self.defaulting_type,
                    accepted=tuple(d.value for d in SpreadDefaulting),
                )
            )
        elif self.defaulting_type == SpreadDefaulting.SYSTEM and self.default_constraints:
            out.append(
                FieldError(
                    "defaultingType",
                    ErrorKind.INVALID,
                    str(self.defaulting_type),
                    "when .defaultConstraints are not empty",
                )
            )
        return out

    @property
    def effective_constraints(self) -> tuple[DefaultConstraint, ...]:
        """The constraints applied to a pod that declares none."""
        if self.defaulting_type is SpreadDefaulting.SYSTEM:
            return SYSTEM_DEFAULT_CONSTRAINTS
        return self.default_constraints


EVENTS = (
    ClusterEvent(
        EventResource.POD,
        ActionType.ADD
        | ActionType.UPDATE_POD_LABEL
        | ActionType.UPDATE_POD_TOLERATION
        | ActionType.DELETE,
    ),
    ClusterEvent(
        EventResource.NODE,
        ActionType.ADD
        | ActionType.DELETE
        | ActionType.UPDATE_NODE_LABEL
        | ActionType.UPDATE_NODE_TAINT,
    ),
)


def _queueing_hint() -> HintFn:
    """Its queueing hint, which reads the per-node logic that imports this module."""
    from kubesalvo.core.pernode.pod_topology_spread_hint import queueing_hint

    return queueing_hint


def _read_constraint(d: ArgsDecoder, raw: Any, path: str) -> DefaultConstraint:
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


def read_args(d: ArgsDecoder, raw: Any, path: str) -> PodTopologySpreadArgs:
    """PodTopologySpreadArgs from its pluginConfig document."""
    f = open_args(d, raw, path, NAME, ("defaultConstraints", "defaultingType"))
    cpath = f.at("defaultConstraints")
    constraints = tuple(
        _read_constraint(d, c, p) for c, p in d.items(f.raw("defaultConstraints"), cpath)
    )
    defaulting: Any = f.text("defaultingType", "System") or "System"
    return build(
        d,
        path,
        lambda: PodTopologySpreadArgs(constraints, defaulting),
        PodTopologySpreadArgs(),
    )


def _hard_constraints_error(
    args: Any, nodes: NodeTable, cls: ParsedPodClass
) -> PreFilterResult | None:
    """The PreFilter's check of the pod's own constraints: an invalid labelSelector in a
    DoNotSchedule one fails the attempt with an error (ScheduleAnyway ones fail it at
    PreScore, the encoder's). The selectors are the encoder's, parsed once per class."""
    if not cls.spread_invalid:
        return None
    error = spread_constraint_error(cls.spec, "DoNotSchedule", cls.spread_selectors)
    if error is None:
        return None
    return PreFilterResult(error=HARD_SPREAD_CONSTRAINTS_ERROR + error)


HARD_CONSTRAINTS = PreFilter(_hard_constraints_error, reads="topologySpreadConstraints")


def _soft_constraints_error(args: Any, nodes: NodeTable, cls: ParsedPodClass) -> str | None:
    """The PreScore's check: an invalid labelSelector in one of the pod's own
    ScheduleAnyway constraints fails the attempt with an error."""
    if not cls.spread_invalid:
        return None
    error = spread_constraint_error(cls.spec, "ScheduleAnyway", cls.spread_selectors)
    return None if error is None else SOFT_SPREAD_CONSTRAINTS_ERROR + error


SOFT_CONSTRAINTS = PreScore(_soft_constraints_error, reads="topologySpreadConstraints")


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.pod_topology_spread import PER_NODE

    return PER_NODE


SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, FILTER, PRE_SCORE, SCORE}),
    args=PodTopologySpreadArgs,
    reasons={
        ERR_REASON_SPREAD_CONSTRAINTS: Code.UNSCHEDULABLE,
        ERR_REASON_SPREAD_MISSING_LABEL: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    },
    events=EVENTS,
    queueing_hint=_queueing_hint,
    args_reader=read_args,
    profile_field="spread",
    kernel_codes={
        ERR_REASON_SPREAD_CONSTRAINTS: "SPREAD",
        ERR_REASON_SPREAD_MISSING_LABEL: "SPREAD_LABEL",
    },
    per_node=_per_node,
    pre_filter=HARD_CONSTRAINTS,
    pre_score=SOFT_CONSTRAINTS,
)
