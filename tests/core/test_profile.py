"""Profile validation: the same limits and messages as kube-scheduler's args validation."""

import pytest

from kubesalvo.core.profile import (
    BalancedAllocationArgs,
    DefaultConstraint,
    FitArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    Profile,
    ProfileError,
    ResourceSpec,
    ScoringStrategy,
    ShapePoint,
    SpreadArgs,
)


def test_strategy_strings_are_converted_and_unknown_ones_refused():
    assert ScoringStrategy(type="MostAllocated").type.value == "MostAllocated"
    with pytest.raises(ProfileError) as err:
        ScoringStrategy(type="Balanced")
    assert err.value.path == "scoringStrategy.type"
    assert "RequestedToCapacityRatio" in str(err.value)


def test_resource_weights_must_be_in_1_to_100():
    with pytest.raises(ProfileError, match=r"resources\[1\].weight"):
        ScoringStrategy(resources=(ResourceSpec("cpu", 1), ResourceSpec("memory", 101)))


def test_requested_to_capacity_ratio_needs_a_sorted_shape_in_range():
    with pytest.raises(ProfileError, match="at least one point"):
        ScoringStrategy(type="RequestedToCapacityRatio")
    with pytest.raises(ProfileError, match="increasing order"):
        ScoringStrategy(
            type="RequestedToCapacityRatio", shape=(ShapePoint(50, 1), ShapePoint(50, 2))
        )
    with pytest.raises(ProfileError, match=r"shape\[0\].score"):
        ScoringStrategy(type="RequestedToCapacityRatio", shape=(ShapePoint(0, 11),))


def test_ignored_resource_groups_cannot_contain_a_slash():
    with pytest.raises(ProfileError, match="can't contain '/'"):
        FitArgs(ignored_resource_groups=frozenset({"example.com/gpu"}))


def test_balanced_allocation_weights_must_be_one():
    with pytest.raises(ProfileError, match="must be 1"):
        BalancedAllocationArgs(resources=(ResourceSpec("cpu", 2),))


def test_system_defaulting_refuses_listed_constraints():
    with pytest.raises(ProfileError, match="defaultingType"):
        SpreadArgs(default_constraints=(DefaultConstraint(1, "zone", "DoNotSchedule"),))
    args = SpreadArgs(
        default_constraints=(DefaultConstraint(1, "zone", "DoNotSchedule"),), defaulting_type="List"
    )
    assert args.effective_constraints == (DefaultConstraint(1, "zone", "DoNotSchedule"),)
    assert SpreadArgs(defaulting_type="List").effective_constraints == ()


def test_duplicate_default_constraints_are_refused():
    c = DefaultConstraint(1, "zone", "DoNotSchedule")
    with pytest.raises(ProfileError, match="Duplicate"):
        SpreadArgs(default_constraints=(c, c), defaulting_type="List")


def test_hard_pod_affinity_weight_range():
    with pytest.raises(ProfileError, match=r"\[0, 100\]"):
        InterPodAffinityArgs(hard_pod_affinity_weight=101)


def test_unknown_plugins_and_bad_weights_are_refused():
    with pytest.raises(ProfileError, match="supported values"):
        Profile(filters=("NodeResourcesFitt",))
    with pytest.raises(ProfileError, match="weight"):
        Profile(scores=(("ImageLocality", 0),))
    with pytest.raises(ProfileError, match="overflow"):
        Profile(scores=(("ImageLocality", 1 << 62), ("NodeAffinity", 1 << 62)))


def test_added_affinity_terms_must_parse():
    bad = {"key": "size", "operator": "Gt", "values": ["big"]}
    required = {"nodeSelectorTerms": [{"matchExpressions": [bad]}]}
    with pytest.raises(ProfileError, match="requiredDuringScheduling") as err:
        NodeAffinityArgs({"requiredDuringSchedulingIgnoredDuringExecution": required})
    assert "nodeSelectorTerms[0]" in err.value.path
    preferred = [{"weight": 1, "preference": {"matchExpressions": [bad]}}]
    with pytest.raises(ProfileError, match="preferredDuringScheduling"):
        NodeAffinityArgs({"preferredDuringSchedulingIgnoredDuringExecution": preferred})
    good = {"key": "size", "operator": "Gt", "values": ["8"]}
    NodeAffinityArgs(
        {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [good]}]
            }
        }
    )
