"""PodTopologySpreadArgs: defaulting types and default constraints."""

import pytest

from kubesalvo.core.plugins.framework import ProfileError
from kubesalvo.core.plugins.pod_topology_spread import DefaultConstraint, PodTopologySpreadArgs


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
