"""PodTopologySpread: its args (defaulting types and default constraints) and its PreFilter
(an invalid selector in one of the pod's own DoNotSchedule constraints is an error) and
PreScore check (in a ScheduleAnyway one)."""

from dataclasses import dataclass, field
from typing import Any

import pytest

from kubesalvo.core.label_selectors import parse_selector
from kubesalvo.core.plugins.framework import ProfileError
from kubesalvo.core.plugins.pod_topology_spread import (
    HARD_CONSTRAINTS,
    HARD_SPREAD_CONSTRAINTS_ERROR,
    SOFT_CONSTRAINTS,
    SOFT_SPREAD_CONSTRAINTS_ERROR,
    SPEC,
    DefaultConstraint,
    PodTopologySpreadArgs,
)


def test_system_defaulting_refuses_listed_constraints():
    with pytest.raises(ProfileError, match="defaultingType"):
        PodTopologySpreadArgs(default_constraints=(DefaultConstraint(1, "zone", "DoNotSchedule"),))
    args = PodTopologySpreadArgs(
        default_constraints=(DefaultConstraint(1, "zone", "DoNotSchedule"),), defaulting_type="List"
    )
    assert args.effective_constraints == (DefaultConstraint(1, "zone", "DoNotSchedule"),)
    assert PodTopologySpreadArgs(defaulting_type="List").effective_constraints == ()


def test_duplicate_default_constraints_are_refused():
    c = DefaultConstraint(1, "zone", "DoNotSchedule")
    with pytest.raises(ProfileError, match="Duplicate"):
        PodTopologySpreadArgs(default_constraints=(c, c), defaulting_type="List")


# --- its PreFilter (PluginSpec.pre_filter): the pod's own DoNotSchedule selectors ---------

INVALID = {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}


@dataclass
class Parsed:
    """A class of pods as the encoder hands it to a PreFilter (framework.ParsedPodClass)."""

    spec: dict[str, Any]
    namespace: str = "default"
    label_map: dict[str, str] = field(default_factory=dict)
    devices: Any = None
    affinity_error: str | None = None
    spread_selectors: list[tuple[Any, str | None]] = field(init=False)
    spread_invalid: bool = field(init=False)

    def __post_init__(self) -> None:
        constraints = self.spec.get("topologySpreadConstraints") or ()
        self.spread_selectors = [parse_selector(c.get("labelSelector")) for c in constraints]
        self.spread_invalid = any(error is not None for _, error in self.spread_selectors)


def constraint(when: str, selector: dict[str, Any]) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": when,
        "labelSelector": selector,
    }


def test_the_spec_contributes_the_prefilter_for_pods_with_constraints():
    assert SPEC.pre_filter is HARD_CONSTRAINTS
    assert HARD_CONSTRAINTS.reads == "topologySpreadConstraints"
    assert not HARD_CONSTRAINTS.narrows


def test_an_invalid_do_not_schedule_selector_fails_the_attempt_with_an_error():
    cls = Parsed({"topologySpreadConstraints": [constraint("DoNotSchedule", INVALID)]})
    answer = HARD_CONSTRAINTS.run(None, None, cls)
    assert answer is not None and not answer.message and answer.keep is None
    assert answer.error.startswith(HARD_SPREAD_CONSTRAINTS_ERROR)
    assert answer.error.endswith("values set can't be empty")


def test_an_invalid_schedule_anyway_selector_is_left_to_prescore():
    cls = Parsed({"topologySpreadConstraints": [constraint("ScheduleAnyway", INVALID)]})
    assert cls.spread_invalid
    assert HARD_CONSTRAINTS.run(None, None, cls) is None


def test_valid_selectors_pass_the_prefilter():
    valid = {"matchLabels": {"app": "web"}}
    cls = Parsed({"topologySpreadConstraints": [constraint("DoNotSchedule", valid)]})
    assert HARD_CONSTRAINTS.run(None, None, cls) is None


# --- its PreScore check (PluginSpec.pre_score): the pod's own ScheduleAnyway selectors ----


def test_the_spec_contributes_the_prescore_check_for_pods_with_constraints():
    assert SPEC.pre_score is SOFT_CONSTRAINTS
    assert SOFT_CONSTRAINTS.reads == "topologySpreadConstraints"


def test_an_invalid_schedule_anyway_selector_fails_at_prescore_with_an_error():
    cls = Parsed({"topologySpreadConstraints": [constraint("ScheduleAnyway", INVALID)]})
    error = SOFT_CONSTRAINTS.run(None, None, cls)
    assert error is not None and error.startswith(SOFT_SPREAD_CONSTRAINTS_ERROR)


def test_an_invalid_do_not_schedule_selector_is_not_the_prescores():
    cls = Parsed({"topologySpreadConstraints": [constraint("DoNotSchedule", INVALID)]})
    assert SOFT_CONSTRAINTS.run(None, None, cls) is None
