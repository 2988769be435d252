"""Profile validation: plugins at the points they implement, weights that cannot overflow."""

import pytest

from kubesalvo.core.profile import Profile, ProfileError


def test_unknown_plugins_and_bad_weights_are_refused():
    with pytest.raises(ProfileError, match="supported values"):
        Profile(filters=("NodeResourcesFitt",))
    with pytest.raises(ProfileError, match="weight"):
        Profile(scores=(("ImageLocality", 0),))
    with pytest.raises(ProfileError, match="overflow"):
        Profile(scores=(("ImageLocality", 1 << 62), ("NodeAffinity", 1 << 62)))


def test_a_running_plugins_configured_args_reach_args_of():
    # DynamicResources has no encoder args field: its filterTimeout used to fall back to
    # the default (simulate --config read 10 s whatever the file said).
    from kubesalvo.core.plugins import names, registry
    from kubesalvo.core.plugins.dynamic_resources import DynamicResourcesArgs
    from kubesalvo.core.plugins.node_label_rank import NodeLabelRankArgs

    configured = {
        names.DYNAMIC_RESOURCES: DynamicResourcesArgs(3.0),
        names.NODE_LABEL_RANK: NodeLabelRankArgs(values=("a",)),
    }
    scores = tuple(registry.DEFAULT_SCORE_WEIGHTS.items())
    profile = Profile.from_args("s", registry.DEFAULT_FILTER_ORDER, scores, configured)
    assert profile.args_of(names.DYNAMIC_RESOURCES) == DynamicResourcesArgs(3.0)
    # a plugin the profile does not run keeps no args
    assert profile.args_of(names.NODE_LABEL_RANK) == NodeLabelRankArgs()
