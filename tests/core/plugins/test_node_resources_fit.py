"""NodeResourcesFitArgs: kube-scheduler's defaults, limits and messages."""

import pytest

from kubesalvo.core.plugins.framework import ProfileError, ResourceSpec
from kubesalvo.core.plugins.node_resources_fit import (
    NodeResourcesFitArgs,
    ScoringStrategy,
    ShapePoint,
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
        NodeResourcesFitArgs(ignored_resource_groups=("example.com/gpu",))
