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


def test_node_filter_reasons_without_a_code_of_their_own_count_against_the_budget(monkeypatch):
    from types import MappingProxyType

    from kubesalvo.core import _codes
    from kubesalvo.core.plugins import framework, registry

    free = _codes.EXTENSION_LAST - _codes.EXTENSION_FIRST + 1
    texts = tuple(f"reason {i}" for i in range(free + 1))
    wide = framework.PluginSpec(
        "Wide",
        frozenset({framework.FILTER}),
        reasons=dict.fromkeys(texts, framework.Code.UNSCHEDULABLE),
        node_filter=framework.NodeFilter(lambda *_: None, "containers", texts),
    )
    monkeypatch.setattr(registry, "PLUGINS", MappingProxyType({**registry.PLUGINS, "Wide": wide}))
    monkeypatch.setitem(registry.EXTENSION_POINTS, "Wide", wide.points)
    with pytest.raises(ProfileError, match=f"reason codes, at most {free} are free"):
        Profile(filters=(*registry.DEFAULT_FILTER_ORDER, "Wide"))
    # with one reason it fits beside the defaults
    one = framework.PluginSpec(
        "Wide",
        frozenset({framework.FILTER}),
        reasons={texts[0]: framework.Code.UNSCHEDULABLE},
        node_filter=framework.NodeFilter(lambda *_: None, "containers", texts[:1]),
    )
    monkeypatch.setattr(registry, "PLUGINS", MappingProxyType({**registry.PLUGINS, "Wide": one}))
    Profile(filters=(*registry.DEFAULT_FILTER_ORDER, "Wide"))
