"""Plugin tables, default weights and kube-scheduler's message formats."""

from kubesalvo.core.plugins import (
    default_preemption,
    dynamic_resources,
    framework,
    names,
    node_affinity,
    node_name,
    node_resources_fit,
    pod_topology_spread,
    post_filter,
    registry,
    taint_toleration,
)
from kubesalvo.core.profile import Profile


def test_fit_error_message_sorts_entries_as_strings():
    counts = {"Insufficient cpu": 3000, taint_toleration.ERR_REASON_UNTOLERATED_TAINT: 2000}
    assert framework.fit_error_message(5000, counts) == (
        "0/5000 nodes are available: 2000 node(s) had untolerated taint(s), 3000 Insufficient cpu."
    )


def test_fit_error_message_orders_counts_lexically_not_numerically():
    counts = {"Insufficient memory": 9, "Insufficient cpu": 10}
    assert framework.fit_error_message(19, counts) == (
        "0/19 nodes are available: 10 Insufficient cpu, 9 Insufficient memory."
    )


def test_fit_error_message_without_reasons_and_with_post_filter():
    assert framework.fit_error_message(0, {}) == "0/0 nodes are available:"
    post = default_preemption.preemption_message(3, {default_preemption.PREEMPTION_NOT_HELPFUL: 3})
    assert framework.fit_error_message(
        3, {node_name.ERR_REASON_NODE_NAME: 3}, postfilter_message=post
    ) == (
        "0/3 nodes are available: 3 node(s) didn't match the requested node name. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_the_default_profiles_full_message_with_dynamic_resources_and_preemption():
    post = framework.post_filter_message(
        dynamic_resources.NO_NEW_CLAIMS_TO_DEALLOCATE,
        default_preemption.preemption_message(2, {default_preemption.PREEMPTION_NOT_HELPFUL: 2}),
    )
    counts = {taint_toleration.ERR_REASON_UNTOLERATED_TAINT: 2}
    assert framework.fit_error_message(2, counts, postfilter_message=post) == (
        "0/2 nodes are available: 2 node(s) had untolerated taint(s). no new claims to "
        "deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for "
        "scheduling."
    )


def test_a_prefilter_message_replaces_the_counts():
    assert framework.fit_error_message(
        4, {"ignored": 4}, prefilter_message=node_affinity.ERR_REASON_NODE_AFFINITY_CONFLICT
    ) == ("0/4 nodes are available: pod affinity terms conflict.")


def test_reason_texts():
    assert (
        node_resources_fit.insufficient_resource("nvidia.com/gpu") == "Insufficient nvidia.com/gpu"
    )
    assert pod_topology_spread.ERR_REASON_SPREAD_MISSING_LABEL == (
        "node(s) didn't match pod topology spread constraints (missing required label)"
    )
    assert framework.prefilter_narrowing_reason(["NodeAffinity"]) == (
        "node(s) didn't satisfy plugin(s) [NodeAffinity]"
    )
    assert (
        framework.success_message("ns", "web-0", "node-7")
        == "Successfully assigned ns/web-0 to node-7"
    )


def test_default_filters_run_in_kube_schedulers_order():
    assert registry.DEFAULT_FILTER_ORDER[:6] == (
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
    )
    assert registry.DEFAULT_FILTER_ORDER.index(
        "PodTopologySpread"
    ) < registry.DEFAULT_FILTER_ORDER.index("InterPodAffinity")


def test_default_profile_has_the_v1_34_weights_and_args():
    profile = Profile.default()
    assert profile.scheduler_name == "kubesalvo"
    assert profile.score_weights == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "VolumeBinding": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    assert profile.fit.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in profile.fit.scoring_strategy.resources] == [
        ("cpu", 1),
        ("memory", 1),
    ]
    assert profile.spread.defaulting_type == "System"
    assert [c.max_skew for c in profile.spread.effective_constraints] == [3, 5]
    assert profile.inter_pod_affinity.hard_pod_affinity_weight == 1


def at(point):
    return tuple(n for n in registry.DEFAULT_PLUGINS if point in registry.MULTI_POINT_EXPANSION[n])


def test_default_plugins_expand_per_point_as_upstreams_defaults():
    # kube-scheduler v1.34 apis/config/testing/defaults: the expanded default profile
    assert at(framework.QUEUE_SORT) == ("PrioritySort",)
    assert at(framework.PRE_FILTER) == (
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
    assert at(framework.FILTER) == registry.DEFAULT_FILTER_ORDER
    assert at(framework.POST_FILTER) == ("DynamicResources", "DefaultPreemption")
    assert at(framework.PRE_SCORE) == (
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    )
    assert at(framework.SCORE) == tuple(registry.DEFAULT_SCORE_WEIGHTS)
    assert at(framework.RESERVE) == ("VolumeBinding", "DynamicResources")
    assert at(framework.PRE_BIND) == ("VolumeBinding", "DynamicResources")
    assert at(framework.BIND) == ("DefaultBinder",)
    assert at(framework.PERMIT) == ()


def test_post_filter_text_in_the_default_profiles_order():
    default = (names.DYNAMIC_RESOURCES, names.DEFAULT_PREEMPTION)
    refused = default_preemption.preemption_message(
        3, {default_preemption.NO_PREEMPTION_VICTIMS: 3}
    )
    assert post_filter.post_filter_text(default, preemption=refused) == (
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption "
        "victims found for incoming pod."
    )
    # DefaultPreemption chose a node: its success ends the run with an empty message.
    assert post_filter.post_filter_text(default, preemption="") == ""
    # DefaultPreemption did not run for the pod: DynamicResources' reason alone.
    assert post_filter.post_filter_text(default) == dynamic_resources.NO_NEW_CLAIMS_TO_DEALLOCATE


def test_post_filter_text_without_dynamic_resources_or_for_a_pod_with_claims():
    refused = "preemption: not eligible due to preemptionPolicy=Never."
    assert post_filter.post_filter_text((names.DEFAULT_PREEMPTION,), preemption=refused) == refused
    both = (names.DYNAMIC_RESOURCES, names.DEFAULT_PREEMPTION)
    assert post_filter.post_filter_text(both, has_claims=True, preemption=refused) == (
        f"{dynamic_resources.STILL_NOT_SCHEDULABLE}, {refused}"
    )
    assert post_filter.post_filter_text(()) == ""


def test_post_filter_text_follows_the_configured_order():
    reversed_order = (names.DEFAULT_PREEMPTION, names.DYNAMIC_RESOURCES)
    refused = "preemption: not eligible due to preemptionPolicy=Never."
    assert post_filter.post_filter_text(reversed_order, preemption=refused) == (
        f"{refused}, no new claims to deallocate"
    )


def test_without_dynamic_resources_state_its_error_is_the_whole_post_filter_part():
    default = (names.DYNAMIC_RESOURCES, names.DEFAULT_PREEMPTION)
    assert post_filter.post_filter_text(default, dynamic_resources_state=False) == "not found"
    # DefaultPreemption first: its reasons are dropped by the error that follows.
    refused = default_preemption.preemption_message(
        2, {default_preemption.PREEMPTION_NOT_HELPFUL: 2}
    )
    reversed_order = (names.DEFAULT_PREEMPTION, names.DYNAMIC_RESOURCES)
    assert (
        post_filter.post_filter_text(
            reversed_order, preemption=refused, dynamic_resources_state=False
        )
        == framework.CYCLE_STATE_NOT_FOUND
    )
    # Not in the profile: nothing reads the missing state.
    assert (
        post_filter.post_filter_text(
            (names.DEFAULT_PREEMPTION,), preemption=refused, dynamic_resources_state=False
        )
        == refused
    )
