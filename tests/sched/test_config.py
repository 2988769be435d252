"""Accepted KubeSchedulerConfiguration forms and the values they load to."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kubesalvo.core.plugins import registry
from kubesalvo.core.plugins.default_preemption import DefaultPreemptionArgs
from kubesalvo.core.plugins.node_resources_fit import NodeResourcesFitArgs, ScoringStrategyType
from kubesalvo.core.plugins.pod_topology_spread import (
    DefaultConstraint,
    PodTopologySpreadArgs,
    SpreadDefaulting,
)
from kubesalvo.sched.config import (
    DEFAULT_SCHEDULER_NAME,
    ConfigError,
    ProfileConfig,
    SchedulerConfig,
    default_config,
    load_config,
    parse_config,
)
from kubesalvo.sched.queue.sorting import QUEUE_SORTS

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "config"


def load(body: str = "") -> SchedulerConfig:
    return parse_config(HEADER + textwrap.dedent(body))


def one_profile(section: str, body: str) -> ProfileConfig:
    """The profile of a configuration whose one profile sets only ``section`` (``plugins``
    or ``pluginConfig``) to the YAML ``body``."""
    body = textwrap.indent(textwrap.dedent(body), "    ")
    return load(f"profiles:\n- {section}:\n{body}").profiles[0]


def test_default_config_has_one_profile_named_kubesalvo() -> None:
    config = load_config(None)
    assert config.scheduler_names == (DEFAULT_SCHEDULER_NAME,) == ("kubesalvo",)
    assert config.notes == ()


def test_default_plugins_per_extension_point_match_kube_scheduler() -> None:
    plugins = default_config().profiles[0].plugins
    assert plugins.at("queueSort") == ("PrioritySort",)
    assert plugins.at("preEnqueue") == ("SchedulingGates", "DynamicResources", "DefaultPreemption")
    assert plugins.at("filter") == registry.DEFAULT_FILTER_ORDER
    assert plugins.at("postFilter") == ("DynamicResources", "DefaultPreemption")
    assert plugins.at("bind") == ("DefaultBinder",)
    assert plugins.at("permit") == ()
    assert dict(plugins.score_weights) == {**registry.DEFAULT_SCORE_WEIGHTS, "VolumeBinding": 1}


def test_default_top_level_values() -> None:
    config = default_config()
    assert config.parallelism == 16
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (1, 10)
    cc = config.client_connection
    assert (cc.qps, cc.burst, cc.content_type, cc.kubeconfig) == (50.0, 100, "application/json", "")
    le = config.leader_election
    assert le.leader_elect is True
    assert (le.lease_duration_seconds, le.renew_deadline_seconds, le.retry_period_seconds) == (
        15.0,
        10.0,
        2.0,
    )
    assert (le.resource_lock, le.resource_namespace, le.resource_name) == (
        "leases",
        "kube-system",
        "kubesalvo",
    )
    assert config.kubesalvo.max_burst_pods == 1000
    assert config.kubesalvo.burst_gathering_window_seconds == pytest.approx(0.01)
    assert config.kubesalvo.pod_max_in_unschedulable_pods_seconds == 300.0


def test_default_args_are_kube_schedulers() -> None:
    profile = default_config().profiles[0]
    fit = profile.args["NodeResourcesFit"]
    assert isinstance(fit, NodeResourcesFitArgs)
    assert fit.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in fit.scoring_strategy.resources] == [
        ("cpu", 1),
        ("memory", 1),
    ]
    assert profile.preemption == DefaultPreemptionArgs(10, 100)
    spread = profile.args["PodTopologySpread"]
    assert isinstance(spread, PodTopologySpreadArgs)
    assert spread.defaulting_type == "System"
    assert [c.topology_key for c in spread.effective_constraints] == [
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
    ]
    assert profile.core.inter_pod_affinity.hard_pod_affinity_weight == 1


def test_default_config_builds_the_core_default_profile() -> None:
    core = default_config().profiles[0].core
    assert core.scheduler_name == "kubesalvo"
    assert core.filters == registry.DEFAULT_FILTER_ORDER
    assert core.fit.scoring_strategy.type is ScoringStrategyType.LEAST_ALLOCATED


def test_deploy_default_yaml_spells_out_the_default_config() -> None:
    assert load_config(DEPLOY / "default.yaml") == default_config()


@pytest.mark.parametrize("path", sorted(DEPLOY.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_config_loads_without_deprecated_fields(path: Path) -> None:
    config = load_config(path)
    assert config.profiles
    assert config.deprecations == ()


def test_deploy_local_and_multi_profile_give_kubesalvos_settings_as_plugin_args() -> None:
    assert load_config(DEPLOY / "local.yaml").kubesalvo.max_burst_pods == 5000
    assert load_config(DEPLOY / "multi-profile.yaml").kubesalvo.max_burst_pods == 2000


def test_deploy_local_yaml_turns_leader_election_off() -> None:
    config = load_config(DEPLOY / "local.yaml")
    assert config.leader_election.leader_elect is False
    assert config.client_connection.qps == 5000


def test_deploy_multi_profile_yaml_loads_two_profiles() -> None:
    config = load_config(DEPLOY / "multi-profile.yaml")
    assert config.scheduler_names == ("kubesalvo", "kubesalvo-binpack")
    binpack = config.profile("kubesalvo-binpack")
    assert binpack is not None
    assert binpack.core.fit.scoring_strategy.type is ScoringStrategyType.MOST_ALLOCATED
    assert dict(binpack.plugins.score_weights)["NodeResourcesFit"] == 5
    assert "ImageLocality" not in binpack.plugins.enabled
    assert binpack.preemption is None
    assert config.profile("nobody") is None


def test_lone_profile_without_name_gets_kubesalvo() -> None:
    config = load("profiles:\n- plugins: {}\n")
    assert config.scheduler_names == ("kubesalvo",)


def test_several_profiles_with_distinct_names() -> None:
    config = load(
        """
        profiles:
        - schedulerName: a
        - schedulerName: b
        - schedulerName: c
        """
    )
    assert config.scheduler_names == ("a", "b", "c")


def test_disabling_at_multipoint_removes_a_default_everywhere() -> None:
    plugins = one_profile(
        "plugins",
        """
        multiPoint:
          disabled: [{name: NodeAffinity}]
        """,
    ).plugins
    assert "NodeAffinity" not in plugins.enabled


def test_disabling_at_one_point_keeps_the_plugin_elsewhere() -> None:
    plugins = one_profile(
        "plugins",
        """
        score:
          disabled: [{name: NodeAffinity}]
        """,
    ).plugins
    assert "NodeAffinity" not in plugins.at("score")
    assert "NodeAffinity" in plugins.at("filter")
    assert "NodeAffinity" in plugins.at("preScore")


def test_star_disables_every_default_at_a_point() -> None:
    plugins = one_profile(
        "plugins",
        """
        score:
          disabled: [{name: "*"}]
          enabled: [{name: ImageLocality, weight: 7}]
        """,
    ).plugins
    assert plugins.score_weights == (("ImageLocality", 7),)
    assert "TaintToleration" in plugins.at("filter")


def test_dynamic_resources_scores_only_where_a_profile_names_it_at_score() -> None:
    """v1.37's DynamicResources Score: kubesalvo's defaults stay v1.34's (no such score,
    multiPoint does not reach it); named at score it runs with the given weight."""
    assert "DynamicResources" not in dict(default_config().profiles[0].plugins.score_weights)
    plugins = one_profile(
        "plugins",
        """
        score:
          enabled: [{name: DynamicResources, weight: 2}]
        """,
    ).plugins
    assert dict(plugins.score_weights)["DynamicResources"] == 2
    assert "DynamicResources" in plugins.at("filter")


def test_reconfigured_default_at_its_point_runs_first_with_the_new_weight() -> None:
    plugins = one_profile(
        "plugins",
        """
        score:
          enabled: [{name: ImageLocality, weight: 10}]
        """,
    ).plugins
    assert plugins.score_weights[0] == ("ImageLocality", 10)
    assert [n for n, _ in plugins.score_weights].count("ImageLocality") == 1


def test_reconfigured_default_at_multipoint_keeps_its_place() -> None:
    plugins = one_profile(
        "plugins",
        """
        multiPoint:
          enabled: [{name: NodeAffinity, weight: 9}]
        """,
    ).plugins
    order = [n for n, _ in plugins.score_weights]
    assert order.index("NodeAffinity") == 1
    assert dict(plugins.score_weights)["NodeAffinity"] == 9


def test_zero_or_unset_weight_means_one() -> None:
    plugins = one_profile(
        "plugins",
        """
        score:
          disabled: [{name: "*"}]
          enabled: [{name: ImageLocality, weight: 0}, {name: NodeAffinity}]
        """,
    ).plugins
    assert plugins.score_weights == (("ImageLocality", 1), ("NodeAffinity", 1))


def test_kubesalvo_plugin_replaces_the_queue_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    # Accepted at queueSort once the queue holds its sort key (what QosAware registers).
    monkeypatch.setitem(QUEUE_SORTS, "QosAware", lambda qp: (qp.timestamp,))
    profile = one_profile(
        "plugins",
        """
        queueSort:
          disabled: [{name: PrioritySort}]
        multiPoint:
          enabled: [{name: QosAware, weight: 2}]
        """,
    )
    assert profile.queue_sort == "QosAware"
    # multiPoint puts it at each of its points, and only there (it does not score).
    assert "QosAware" in profile.plugins.at("preBind") and "QosAware" in profile.plugins.at(
        "postBind"
    )
    assert "QosAware" not in dict(profile.plugins.score_weights)


def test_star_at_a_point_keeps_multipoint_plugins_out_of_it_only() -> None:
    plugins = one_profile(
        "plugins",
        """
        score:
          disabled: [{name: "*"}]
        """,
    ).plugins
    assert plugins.at("score") == ()
    assert plugins.score_weights == ()
    assert "NodeResourcesFit" in plugins.at("preScore")


def test_durations_accept_go_syntax() -> None:
    le = load(
        """
        leaderElection:
          leaseDuration: 1m30s
          renewDeadline: 1.5s
          retryPeriod: 500ms
        """
    ).leader_election
    assert (le.lease_duration_seconds, le.renew_deadline_seconds, le.retry_period_seconds) == (
        90.0,
        1.5,
        0.5,
    )


def test_leader_election_off_skips_its_checks() -> None:
    le = load("leaderElection: {leaderElect: false, resourceLock: endpoints}\n").leader_election
    assert le.leader_elect is False
    assert le.resource_lock == "endpoints"


def test_percentage_of_nodes_to_score_is_accepted_and_noted_as_ignored() -> None:
    config = load(
        """
        percentageOfNodesToScore: 30
        profiles:
        - percentageOfNodesToScore: 70
        """
    )
    assert config.percentage_of_nodes_to_score == 30
    assert config.profiles[0].percentage_of_nodes_to_score == 70
    assert len(config.notes) == 2
    assert all("scores every feasible node" in n for n in config.notes)
    assert "profiles[0].percentageOfNodesToScore" in config.notes[1]


def test_protobuf_content_type_is_accepted_and_noted() -> None:
    config = load("clientConnection: {contentType: application/vnd.kubernetes.protobuf}\n")
    assert any("application/json" in n for n in config.notes)


def test_client_connection_and_backoff_values() -> None:
    config = load(
        """
        clientConnection: {kubeconfig: /etc/kube.conf, qps: 250.5, burst: 500}
        podInitialBackoffSeconds: 2
        podMaxBackoffSeconds: 60
        parallelism: 16
        delayCacheUntilActive: false
        enableProfiling: false
        enableContentionProfiling: false
        """
    )
    cc = config.client_connection
    assert (cc.kubeconfig, cc.qps, cc.burst) == ("/etc/kube.conf", 250.5, 500)
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2, 60)
    assert config.parallelism == 16
    assert config.delay_cache_until_active is False
    assert (config.enable_profiling, config.enable_contention_profiling) == (False, False)


def test_kubesalvo_plugin_args_set_kubesalvos_own_settings() -> None:
    config = load(
        """
        profiles:
        - schedulerName: a
        - schedulerName: b
          pluginConfig:
          - name: Kubesalvo
            args:
              maxBurstPods: 5000
              burstGatheringWindow: 50ms
              podMaxInUnschedulablePodsDuration: 1m
        """
    )
    options = config.kubesalvo
    assert options.max_burst_pods == 5000
    assert options.burst_gathering_window_seconds == pytest.approx(0.05)
    assert options.pod_max_in_unschedulable_pods_seconds == 60.0
    assert config.deprecations == ()


def test_the_deprecated_kubesalvo_block_is_still_read_and_flagged() -> None:
    config = load(
        """
        kubesalvo:
          maxBurstPods: 5000
          burstGatheringWindow: 50ms
          podMaxInUnschedulablePodsDuration: 1m
        """
    )
    options = config.kubesalvo
    assert options.max_burst_pods == 5000
    assert options.burst_gathering_window_seconds == pytest.approx(0.05)
    assert options.pod_max_in_unschedulable_pods_seconds == 60.0
    ((path, advice),) = config.deprecations
    assert path == "kubesalvo"
    assert 'pluginConfig entry named "Kubesalvo"' in advice


def test_kubesalvo_settings_given_twice_are_refused() -> None:
    with pytest.raises(ConfigError) as both:
        load(
            """
            kubesalvo: {maxBurstPods: 10}
            profiles:
            - pluginConfig:
              - {name: Kubesalvo, args: {maxBurstPods: 10}}
            """
        )
    assert "also given in profiles[0].pluginConfig[0].args" in str(both.value)
    with pytest.raises(ConfigError) as differing:
        load(
            """
            profiles:
            - schedulerName: a
              pluginConfig:
              - {name: Kubesalvo, args: {maxBurstPods: 10}}
            - schedulerName: b
              pluginConfig:
              - {name: Kubesalvo, args: {maxBurstPods: 20}}
            """
        )
    assert "profiles[1].pluginConfig[0].args" in str(differing.value)
    assert "must be the same in every profile" in str(differing.value)


def test_requested_to_capacity_ratio_args() -> None:
    profile = one_profile(
        "pluginConfig",
        """
        - name: NodeResourcesFit
          args:
            apiVersion: kubescheduler.config.k8s.io/v1
            kind: NodeResourcesFitArgs
            ignoredResources: [example.com/foo]
            ignoredResourceGroups: [example.com]
            scoringStrategy:
              type: RequestedToCapacityRatio
              resources: [{name: cpu, weight: 0}, {name: nvidia.com/gpu, weight: 5}]
              requestedToCapacityRatio:
                shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
        """,
    )
    fit = profile.core.fit
    assert fit.ignored_resources == ("example.com/foo",)
    assert fit.ignored_resource_groups == ("example.com",)
    strategy = fit.scoring_strategy
    assert strategy.type is ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO
    assert [(r.name, r.weight) for r in strategy.resources] == [("cpu", 1), ("nvidia.com/gpu", 5)]
    assert [(p.utilization, p.score) for p in strategy.shape] == [(0, 0), (100, 10)]


def test_scoring_strategy_without_resources_gets_cpu_and_memory() -> None:
    strategy = one_profile(
        "pluginConfig",
        """
        - name: NodeResourcesFit
          args: {scoringStrategy: {type: MostAllocated}}
        """,
    ).core.fit.scoring_strategy
    assert strategy.type is ScoringStrategyType.MOST_ALLOCATED
    assert [(r.name, r.weight) for r in strategy.resources] == [("cpu", 1), ("memory", 1)]


def test_pod_topology_spread_list_defaulting() -> None:
    profile = one_profile(
        "pluginConfig",
        """
        - name: PodTopologySpread
          args:
            defaultingType: List
            defaultConstraints:
            - maxSkew: 2
              topologyKey: topology.kubernetes.io/zone
              whenUnsatisfiable: DoNotSchedule
              minDomains: 3
              nodeAffinityPolicy: Ignore
              nodeTaintsPolicy: Honor
              matchLabelKeys: [app]
            - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}
        """,
    )
    spread = profile.args["PodTopologySpread"]
    assert isinstance(spread, PodTopologySpreadArgs)
    assert spread.default_constraints[0] == DefaultConstraint(
        2, "topology.kubernetes.io/zone", "DoNotSchedule", 3, "Ignore", "Honor", ("app",)
    )
    assert profile.core.spread.defaulting_type is SpreadDefaulting.LIST
    assert [c.max_skew for c in profile.core.spread.effective_constraints] == [2, 1]


def test_pod_topology_spread_list_without_constraints_means_none() -> None:
    spread = one_profile(
        "pluginConfig",
        """
        - {name: PodTopologySpread, args: {defaultingType: List}}
        """,
    ).core.spread
    assert spread.effective_constraints == ()


def test_inter_pod_affinity_and_preemption_args() -> None:
    profile = one_profile(
        "pluginConfig",
        """
        - name: InterPodAffinity
          args: {hardPodAffinityWeight: 0, ignorePreferredTermsOfExistingPods: true}
        - name: DefaultPreemption
          args: {minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 5}
        """,
    )
    ipa = profile.core.inter_pod_affinity
    assert (ipa.hard_pod_affinity_weight, ipa.ignore_preferred_terms_of_existing_pods) == (0, True)
    assert profile.preemption == DefaultPreemptionArgs(0, 5)


def test_node_affinity_added_affinity_reaches_the_core_in_api_shape() -> None:
    profile = one_profile(
        "pluginConfig",
        """
        - name: NodeAffinity
          args:
            addedAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - {key: pool, operator: In, values: [batch]}
                  - {key: cores, operator: Gt, values: ["8"]}
                  - {key: spot, operator: DoesNotExist}
                  matchFields:
                  - {key: metadata.name, operator: NotIn, values: [node-0]}
              preferredDuringSchedulingIgnoredDuringExecution:
              - weight: 10
                preference:
                  matchExpressions: [{key: zone, operator: In, values: [a]}]
        """,
    )
    added = profile.core.node_affinity.added_affinity
    assert added == {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "pool", "operator": "In", "values": ["batch"]},
                        {"key": "cores", "operator": "Gt", "values": ["8"]},
                        {"key": "spot", "operator": "DoesNotExist"},
                    ],
                    "matchFields": [
                        {"key": "metadata.name", "operator": "NotIn", "values": ["node-0"]}
                    ],
                }
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 10,
                "preference": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
                },
            }
        ],
    }


def test_args_for_a_plugin_that_is_not_enabled_are_noted() -> None:
    config = load(
        """
        profiles:
        - plugins:
            multiPoint:
              disabled: [{name: InterPodAffinity}]
          pluginConfig:
          - {name: InterPodAffinity, args: {hardPodAffinityWeight: 5}}
          - {name: TaintToleration}
        """
    )
    assert any("InterPodAffinity" in n and "not enabled" in n for n in config.notes)


def test_json_documents_are_accepted() -> None:
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "json"}],
    }
    assert parse_config(json.dumps(doc)).scheduler_names == ("json",)


def test_null_values_mean_unset() -> None:
    config = load("parallelism: null\nprofiles: null\nclientConnection: null\n")
    assert config.parallelism == 16
    assert config.scheduler_names == ("kubesalvo",)


def test_profiles_sharing_a_queue_sort_are_accepted() -> None:
    config = load(
        """
        profiles:
        - schedulerName: a
          plugins: {queueSort: {enabled: [{name: PrioritySort}]}}
        - schedulerName: b
        """
    )
    assert {p.queue_sort for p in config.profiles} == {"PrioritySort"}


def test_describe_lists_notes_then_each_profiles_plugins() -> None:
    config = load(
        """
        percentageOfNodesToScore: 10
        profiles:
        - schedulerName: a
          plugins: {score: {disabled: [{name: "*"}], enabled: [{name: ImageLocality, weight: 4}]}}
        """
    )
    lines = config.describe()
    assert lines[0].startswith("note: percentageOfNodesToScore")
    assert 'profile "a":' in lines
    assert "  score: ImageLocality=4" in lines
    assert "  queueSort: PrioritySort" in lines
    assert "  NodeResourcesFit scoring: LeastAllocated (cpu=1, memory=1)" in lines
    assert not any(line.startswith("  permit") for line in lines)


def test_every_plugin_with_an_args_model_has_a_reader_and_no_other() -> None:
    from kubesalvo.core.plugins import registry
    from kubesalvo.sched.config.args import ARGS_DECODERS, default_args

    assert set(ARGS_DECODERS) == set(registry.ARGS)
    for plugin, model in registry.ARGS.items():
        # The reader's defaults are the model's own: one args model, not two.
        assert default_args(plugin) == model()
