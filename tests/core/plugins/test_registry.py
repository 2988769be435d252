"""The registry: every plugin module registered once, its tables consistent."""

import importlib
import pkgutil

import pytest

import kubesalvo.core.plugins as package
from kubesalvo.core.plugins import framework, names, registry
from kubesalvo.core.plugins.framework import ArgsError, PluginSpec

_NOT_PLUGINS = {"framework", "names", "registry", "post_filter"}
PLUGIN_MODULES = sorted(
    m.name for m in pkgutil.iter_modules(package.__path__) if m.name not in _NOT_PLUGINS
)


@pytest.mark.parametrize("module_name", PLUGIN_MODULES)
def test_each_plugin_module_is_registered_under_its_name(module_name):
    module = importlib.import_module(f"kubesalvo.core.plugins.{module_name}")
    spec = module.SPEC
    assert isinstance(spec, PluginSpec)
    assert spec.name == module.NAME
    assert registry.PLUGINS[spec.name] is spec
    assert spec.points and spec.points <= set(framework.POINTS)


def test_every_name_has_a_plugin_and_every_plugin_a_name():
    declared = {v for k, v in vars(names).items() if k.isupper()}
    assert declared == set(registry.PLUGINS)


def test_default_plugins_filters_and_weights_are_kube_schedulers():
    assert registry.DEFAULT_FILTER_ORDER == (
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    )
    for plugin in registry.DEFAULT_SCORE_WEIGHTS:
        assert framework.SCORE in registry.EXTENSION_POINTS[plugin]


@pytest.mark.parametrize("plugin", sorted(registry.ARGS))
def test_each_args_model_defaults_to_a_valid_value(plugin):
    args = registry.ARGS[plugin]()
    assert args.problems() == []


def test_an_args_model_reports_every_problem_at_once():
    from kubesalvo.core.plugins.default_preemption import DefaultPreemptionArgs

    with pytest.raises(ArgsError) as err:
        DefaultPreemptionArgs(101, -1)
    assert [(p.path, p.kind) for p in err.value.problems] == [
        ("minCandidateNodesPercentage", framework.ErrorKind.INVALID),
        ("minCandidateNodesAbsolute", framework.ErrorKind.INVALID),
    ]
    assert err.value.path == "minCandidateNodesPercentage"


def test_a_field_error_moves_below_a_path():
    error = framework.FieldError("resources[0].weight", framework.ErrorKind.INVALID, 2, "must be 1")
    assert error.under("profiles[0].pluginConfig[1].args").path == (
        "profiles[0].pluginConfig[1].args.resources[0].weight"
    )
    assert error.under("").path == "resources[0].weight"


def test_every_fixed_reason_has_a_status_code_and_one_plugin():
    assert set(registry.REASON_CODES) == set(registry.REASON_PLUGIN)
    assert registry.REASON_PLUGIN["node(s) had untolerated taint(s)"] == "TaintToleration"


def test_only_node_affinity_narrows_at_prefilter():
    # The kernel counts narrowed rows under one code whose text names NodeAffinity
    # (core/reasons.py): a second narrowing plugin needs that text to name the set.
    narrowing = [s.name for s in registry.PLUGINS.values() if s.pre_filter and s.pre_filter.narrows]
    assert narrowing == [names.NODE_AFFINITY]


def test_the_registry_gathers_each_plugins_queueing_hint():
    hints = registry.queueing_hints()
    assert set(hints) == {
        names.NODE_RESOURCES_FIT,
        names.NODE_AFFINITY,
        names.TAINT_TOLERATION,
        names.NODE_UNSCHEDULABLE,
        names.INTER_POD_AFFINITY,
        names.POD_TOPOLOGY_SPREAD,
        names.COSCHEDULING,
        names.DYNAMIC_RESOURCES,
    }
    assert all(registry.PLUGIN_EVENTS[name] for name in hints)


def test_a_queueing_hint_needs_events_to_answer_for():
    with pytest.raises(ValueError, match="registers no events"):
        PluginSpec("NoEvents", frozenset({framework.FILTER}), queueing_hint=lambda: print)


def test_every_queueing_hint_queues_when_it_lacks_the_objects():
    from kubesalvo.core.plugins.framework import NODE_ADD
    from tests.core.pernode.hint_fixtures import pod

    for name, hint in registry.queueing_hints().items():
        assert hint(pod(), NODE_ADD, None, None), name


def test_each_profile_field_holds_its_plugins_args_model_by_default():
    from kubesalvo.core.profile import Profile

    profile = Profile.default()
    assert set(registry.PROFILE_FIELDS) == {
        names.NODE_RESOURCES_FIT,
        names.NODE_RESOURCES_BALANCED_ALLOCATION,
        names.POD_TOPOLOGY_SPREAD,
        names.INTER_POD_AFFINITY,
        names.NODE_AFFINITY,
    }
    for plugin, attr in registry.PROFILE_FIELDS.items():
        assert getattr(profile, attr) == registry.ARGS[plugin]()
        assert profile.args_of(plugin) is getattr(profile, attr)


def test_kube_schedulers_args_kinds_have_their_readers_in_their_modules():
    readers = {name for name, spec in registry.PLUGINS.items() if spec.args_reader is not None}
    assert readers == {
        names.DEFAULT_PREEMPTION,
        names.DYNAMIC_RESOURCES,
        names.INTER_POD_AFFINITY,
        names.NODE_AFFINITY,
        names.NODE_RESOURCES_BALANCED_ALLOCATION,
        names.NODE_RESOURCES_FIT,
        names.POD_TOPOLOGY_SPREAD,
        names.VOLUME_BINDING,
    }


def test_a_plugin_without_args_has_no_args_reader():
    with pytest.raises(ValueError, match="takes no args"):
        PluginSpec("NoArgs", frozenset({framework.FILTER}), args_reader=lambda d, raw, path: None)


def test_each_kernel_code_a_plugin_names_is_the_kernels_and_given_once():
    from kubesalvo.core import _codes
    from kubesalvo.core.reasons import FIXED_REASONS

    named = [
        (spec.name, text, code)
        for spec in registry.PLUGINS.values()
        for text, code in spec.kernel_codes.items()
    ]
    assert len({code for _, _, code in named}) == len(named) == len(FIXED_REASONS)
    for plugin, text, code in named:
        assert FIXED_REASONS[getattr(_codes, code)] == (plugin, text)
    assert FIXED_REASONS[_codes.TAINT] == (
        names.TAINT_TOLERATION,
        "node(s) had untolerated taint(s)",
    )


def test_a_kernel_code_is_for_one_of_the_plugins_own_reasons():
    with pytest.raises(ValueError, match="is not its reason"):
        PluginSpec("Codes", frozenset({framework.FILTER}), kernel_codes={"other": "TAINT"})


def test_the_queue_sort_plugins_carry_their_own_sort_keys():
    from kubesalvo.sched.queue.sorting import sort_key_for

    keyed = {name for name, spec in registry.PLUGINS.items() if spec.sort_key is not None}
    assert keyed == {names.PRIORITY_SORT, names.GROUP_PRIORITY, names.QOS_AWARE}
    for name in keyed:
        assert sort_key_for(name) is registry.PLUGINS[name].sort_key
    with pytest.raises(ValueError, match="queueSort point"):
        PluginSpec("Keyed", frozenset({framework.FILTER}), sort_key=lambda qp: ())


def _per_node_of(spec):
    """The per-node Filter and Score the evaluator runs for a spec: its own, else its
    static functions'."""
    own = registry.per_node().get(spec.name) or framework.PerNode()
    has_filter = own.filter is not None or spec.static_filter is not None
    has_score = own.score is not None or (spec.static_score or spec.score_channel) is not None
    return has_filter, has_score


@pytest.mark.parametrize("name", sorted(registry.PLUGINS))
def test_every_filter_and_score_plugin_has_its_per_node_logic(name):
    spec = registry.PLUGINS[name]
    has_filter, has_score = _per_node_of(spec)
    assert has_filter == (framework.FILTER in spec.points), name
    assert has_score == (framework.SCORE in spec.points), name


def test_per_node_logic_is_for_a_filter_or_score_plugin():
    with pytest.raises(ValueError, match="no filter or score point"):
        PluginSpec("Sorter", frozenset({framework.QUEUE_SORT}), per_node=framework.PerNode)


def test_a_prescore_check_is_for_a_plugin_with_prescore_and_score_points():
    check = framework.PreScore(lambda args, nodes, cls: None, reads="affinity")
    with pytest.raises(ValueError, match="must implement preScore and score"):
        PluginSpec("Checker", frozenset({framework.PRE_SCORE}), pre_score=check)
    spec = PluginSpec("Checker", frozenset({framework.PRE_SCORE, framework.SCORE}), pre_score=check)
    assert spec.pre_score is check
