"""Refused KubeSchedulerConfiguration files: each error names its field path and the
accepted values."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kubesalvo.sched.config import ConfigError, ErrorKind, FieldError, load_config, parse_config

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def refused(body: str, header: str = HEADER) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(header + textwrap.dedent(body))
    return info.value


def error_at(err: ConfigError, path: str) -> FieldError:
    matches = [e for e in err.errors if e.path == path]
    assert matches, f"no error at {path}; got {err.paths}"
    return matches[0]


def test_unknown_top_level_field_lists_the_known_ones() -> None:
    err = refused("percentOfNodesToScore: 50\n")
    e = error_at(err, "percentOfNodesToScore")
    assert e.kind is ErrorKind.UNKNOWN_FIELD
    assert "percentageOfNodesToScore" in e.accepted
    assert 'supported fields: "apiVersion"' in str(err)


def test_unknown_profile_field() -> None:
    e = error_at(refused("profiles:\n- plugin: {}\n"), "profiles[0].plugin")
    assert set(e.accepted) == {
        "schedulerName",
        "percentageOfNodesToScore",
        "plugins",
        "pluginConfig",
    }


def test_unknown_extension_point() -> None:
    e = error_at(refused("profiles:\n- plugins: {scoring: {}}\n"), "profiles[0].plugins.scoring")
    assert "score" in e.accepted and "multiPoint" in e.accepted


def test_unknown_score_plugin_names_path_and_score_plugins() -> None:
    err = refused(
        """
        profiles:
        - plugins:
            score:
              enabled: [{name: ImageLocality}, {name: NodeAffinity}, {name: NodeResourcesFits}]
        """
    )
    e = error_at(err, "profiles[0].plugins.score.enabled[2].name")
    assert e.kind is ErrorKind.UNSUPPORTED
    assert e.value == "NodeResourcesFits"
    assert "NodeResourcesFit" in e.accepted and "NodeName" not in e.accepted
    assert "profiles[0].plugins.score.enabled[2].name: Unsupported value" in str(err)


def test_plugin_at_an_extension_point_it_does_not_implement() -> None:
    err = refused(
        """
        profiles:
        - plugins:
            filter:
              enabled: [{name: ImageLocality}]
        """
    )
    e = error_at(err, "profiles[0].plugins.filter.enabled[0].name")
    assert "does not extend FilterPlugin" in e.detail
    assert "TaintToleration" in e.accepted


def test_unknown_disabled_plugin() -> None:
    e = error_at(
        refused("profiles:\n- plugins: {multiPoint: {disabled: [{name: ImageLocalty}]}}\n"),
        "profiles[0].plugins.multiPoint.disabled[0].name",
    )
    assert "*" in e.accepted and "ImageLocality" in e.accepted


def test_removed_plugin_is_invalid_in_v1() -> None:
    e = error_at(
        refused("profiles:\n- plugins: {filter: {enabled: [{name: EBSLimits}]}}\n"),
        "profiles[0].plugins.filter.enabled[0]",
    )
    assert 'was invalid in version "kubescheduler.config.k8s.io/v1"' in e.detail


@pytest.mark.parametrize("weight", [-1, 2**31])
def test_plugin_weight_out_of_range(weight: int) -> None:
    plugin = f"{{name: ImageLocality, weight: {weight}}}"
    err = refused(f"profiles:\n- plugins: {{score: {{enabled: [{plugin}]}}}}\n")
    assert "profiles[0].plugins.score.enabled[0].weight" in err.paths


def test_duplicate_scheduler_names() -> None:
    err = refused("profiles:\n- schedulerName: a\n- schedulerName: b\n- schedulerName: a\n")
    e = error_at(err, "profiles[2].schedulerName")
    assert e.kind is ErrorKind.DUPLICATE
    assert "profiles[0].schedulerName" in e.detail


def test_every_profile_of_several_needs_a_name() -> None:
    err = refused("profiles:\n- schedulerName: a\n- plugins: {}\n")
    assert error_at(err, "profiles[1].schedulerName").kind is ErrorKind.REQUIRED


def test_empty_scheduler_name_is_refused_even_alone() -> None:
    err = refused('profiles:\n- schedulerName: ""\n')
    assert error_at(err, "profiles[0].schedulerName").kind is ErrorKind.REQUIRED


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("15", "must be a duration string"),
        ('"15"', 'missing unit in duration "15"'),
        ('"1m30x"', 'unknown unit "x"'),
        ('"fast"', "invalid duration"),
    ],
)
def test_bad_duration_syntax(value: str, fragment: str) -> None:
    err = refused(f"leaderElection:\n  leaseDuration: {value}\n")
    e = error_at(err, "leaderElection.leaseDuration")
    assert fragment in str(e)
    assert '"1m30s"' in str(e)


def test_lease_duration_must_exceed_renew_deadline() -> None:
    err = refused("leaderElection: {leaseDuration: 10s, renewDeadline: 10s}\n")
    assert "must be greater than `RenewDeadline`" in str(
        error_at(err, "leaderElection.leaseDuration")
    )


def test_negative_retry_period() -> None:
    err = refused("leaderElection: {retryPeriod: -1s}\n")
    assert "must be greater than zero" in str(error_at(err, "leaderElection.retryPeriod"))


def test_resource_lock_must_be_leases() -> None:
    e = error_at(
        refused("leaderElection: {resourceLock: endpoints}\n"), "leaderElection.resourceLock"
    )
    assert e.accepted == ("leases",)


@pytest.mark.parametrize(
    ("header", "path", "accepted"),
    [
        (
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            "apiVersion",
            "kubescheduler.config.k8s.io/v1",
        ),
        ("kind: KubeSchedulerConfiguration\n", "apiVersion", "kubescheduler.config.k8s.io/v1"),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Scheduler\n",
            "kind",
            "KubeSchedulerConfiguration",
        ),
        ("apiVersion: kubescheduler.config.k8s.io/v1\n", "kind", "KubeSchedulerConfiguration"),
    ],
)
def test_api_version_and_kind(header: str, path: str, accepted: str) -> None:
    e = error_at(refused("", header=header), path)
    assert e.accepted == (accepted,)


def test_duplicate_yaml_key() -> None:
    err = refused("parallelism: 4\nparallelism: 8\n")
    assert 'duplicate field "parallelism"' in str(err)


def test_not_yaml() -> None:
    err = refused("profiles: [\n")
    assert "not valid YAML" in str(err)


def test_document_must_be_an_object() -> None:
    with pytest.raises(ConfigError, match="must be of type object"):
        parse_config("- a\n- b\n")


@pytest.mark.parametrize(
    ("body", "path", "fragment"),
    [
        ('parallelism: "16"\n', "parallelism", "must be of type integer, not string"),
        ("parallelism: 1.5\n", "parallelism", "must be of type integer, not number"),
        ("parallelism: true\n", "parallelism", "must be of type integer, not bool"),
        ("parallelism: 0\n", "parallelism", "greater than zero"),
        ("parallelism: 4294967296\n", "parallelism", "32-bit"),
        ("clientConnection: {qps: fast}\n", "clientConnection.qps", "type number"),
        ("clientConnection: {burst: -1}\n", "clientConnection.burst", "non-negative"),
        ("clientConnection: {kubeconfig: 5}\n", "clientConnection.kubeconfig", "type string"),
        ("delayCacheUntilActive: yes please\n", "delayCacheUntilActive", "type boolean"),
        ("podInitialBackoffSeconds: 0\n", "podInitialBackoffSeconds", "greater than 0"),
        (
            "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 4\n",
            "podMaxBackoffSeconds",
            "greater than or equal to PodInitialBackoffSeconds",
        ),
        ("percentageOfNodesToScore: 101\n", "percentageOfNodesToScore", "[0-100]"),
        (
            "profiles:\n- percentageOfNodesToScore: -1\n",
            "profiles[0].percentageOfNodesToScore",
            "[0-100]",
        ),
        ("profiles: {a: 1}\n", "profiles", "type array"),
        ("kubesalvo: {maxBurstPods: 0}\n", "kubesalvo.maxBurstPods", "greater than 0"),
        ("kubesalvo: {burstGatheringWindow: -5ms}\n", "kubesalvo.burstGatheringWindow", "negative"),
        (
            "kubesalvo: {podMaxInUnschedulablePodsDuration: 0s}\n",
            "kubesalvo.podMaxInUnschedulablePodsDuration",
            "greater than zero",
        ),
        ("extenders: [{urlPrefix: http://x}]\n", "extenders", "does not call scheduler extenders"),
        # Fields kube-scheduler acts on and kubesalvo cannot: refused, never ignored.
        ("parallelism: 32\n", "parallelism", "one compiled pass"),
        ("delayCacheUntilActive: true\n", "delayCacheUntilActive", "keeps its informers"),
        ("enableContentionProfiling: true\n", "enableContentionProfiling", "no contention"),
    ],
)
def test_bad_values(body: str, path: str, fragment: str) -> None:
    assert fragment in str(error_at(refused(body), path))


def test_unknown_kubesalvo_field() -> None:
    e = error_at(refused("kubesalvo: {burstSize: 5}\n"), "kubesalvo.burstSize")
    assert "maxBurstPods" in e.accepted


def test_unsupported_content_type() -> None:
    e = error_at(
        refused("clientConnection: {contentType: text/xml}\n"), "clientConnection.contentType"
    )
    assert "application/json" in e.accepted


def test_two_queue_sort_plugins() -> None:
    err = refused("profiles:\n- plugins: {queueSort: {enabled: [{name: GroupPriority}]}}\n")
    e = error_at(err, "profiles[0].plugins.queueSort")
    assert "only one queue sort plugin required" in e.detail and "but got 2" in e.detail


def test_no_bind_plugin() -> None:
    err = refused('profiles:\n- plugins: {bind: {disabled: [{name: "*"}]}}\n')
    e = error_at(err, "profiles[0].plugins.bind")
    assert "at least one bind plugin is needed" in e.detail
    assert e.accepted == ("DefaultBinder",)


def test_queue_sort_must_match_across_profiles() -> None:
    err = refused(
        """
        profiles:
        - schedulerName: a
        - schedulerName: b
          plugins:
            queueSort:
              disabled: [{name: PrioritySort}]
              enabled: [{name: GroupPriority}]
        """
    )
    assert "must be the same for all profiles" in str(
        error_at(err, "profiles[1].plugins.queueSort")
    )


def test_plugin_twice_in_multipoint() -> None:
    twice = "[{name: ImageLocality}, {name: ImageLocality}]"
    err = refused(f"profiles:\n- plugins: {{multiPoint: {{enabled: {twice}}}}}\n")
    e = error_at(err, "profiles[0].plugins.multiPoint.enabled[1].name")
    assert 'already registered as "multiPoint"' in e.detail


def test_plugin_twice_at_one_point() -> None:
    err = refused(
        "profiles:\n- plugins: {filter: {enabled: [{name: NodeName}, {name: NodeName}]}}\n"
    )
    assert 'already registered as "FilterPlugin"' in str(
        error_at(err, "profiles[0].plugins.filter.enabled[1].name")
    )


def test_plugin_config_twice() -> None:
    err = refused(
        "profiles:\n- pluginConfig: [{name: InterPodAffinity}, {name: InterPodAffinity}]\n"
    )
    assert error_at(err, "profiles[0].pluginConfig[1]").kind is ErrorKind.DUPLICATE


def test_plugin_config_for_unknown_plugin() -> None:
    e = error_at(
        refused("profiles:\n- pluginConfig: [{name: NodeResourceFit, args: {}}]\n"),
        "profiles[0].pluginConfig[0].name",
    )
    assert "NodeResourcesFit" in e.accepted


def plugin_args(name: str, args: str) -> ConfigError:
    """The refusal of a profile that gives plugin ``name`` the args ``args`` (YAML flow)."""
    return refused(f"profiles:\n- pluginConfig:\n  - name: {name}\n    args: {args}\n")


def fit_args(args: str) -> ConfigError:
    return plugin_args("NodeResourcesFit", args)


ARGS = "profiles[0].pluginConfig[0].args"


def test_args_for_a_plugin_without_args() -> None:
    err = plugin_args("TaintToleration", "{a: 1}")
    assert "takes no args" in str(error_at(err, ARGS))


def test_unknown_args_field() -> None:
    e = error_at(fit_args("{scoringStrategies: {}}"), f"{ARGS}.scoringStrategies")
    assert "scoringStrategy" in e.accepted


def test_args_of_another_kind() -> None:
    e = error_at(fit_args("{kind: InterPodAffinityArgs}"), f"{ARGS}.kind")
    assert e.accepted == ("NodeResourcesFitArgs",)


def test_bad_scoring_strategy_type() -> None:
    e = error_at(fit_args("{scoringStrategy: {type: Balanced}}"), f"{ARGS}.scoringStrategy.type")
    assert e.accepted == ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")


def test_scoring_strategy_type_has_no_default_inside_a_given_strategy() -> None:
    e = error_at(
        fit_args("{scoringStrategy: {resources: [{name: cpu}]}}"), f"{ARGS}.scoringStrategy.type"
    )
    assert e.value == ""


@pytest.mark.parametrize("weight", [101, -1])
def test_resource_weight_out_of_range(weight: int) -> None:
    resources = f"[{{name: cpu, weight: {weight}}}]"
    err = fit_args(f"{{scoringStrategy: {{type: LeastAllocated, resources: {resources}}}}}")
    e = error_at(err, f"{ARGS}.scoringStrategy.resources[0].weight")
    assert "resource weight of cpu not in valid range (0, 100]" in e.detail


def test_requested_to_capacity_ratio_needs_a_shape() -> None:
    err = fit_args("{scoringStrategy: {type: RequestedToCapacityRatio}}")
    assert error_at(err, f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape").kind is (
        ErrorKind.REQUIRED
    )


def test_shape_points_sorted_and_in_range() -> None:
    err = fit_args(
        "{scoringStrategy: {type: RequestedToCapacityRatio, requestedToCapacityRatio: "
        "{shape: [{utilization: 50, score: 11}, {utilization: 40, score: 0}, "
        "{utilization: 101, score: 1}]}}}"
    )
    shape = f"{ARGS}.scoringStrategy.requestedToCapacityRatio.shape"
    assert "sorted in increasing order" in error_at(err, f"{shape}[1].utilization").detail
    assert "[0, 10]" in error_at(err, f"{shape}[0].score").detail
    assert "[0, 100]" in error_at(err, f"{shape}[2].utilization").detail


def test_ignored_resources_must_be_label_names() -> None:
    err = fit_args("{ignoredResources: ['bad name'], ignoredResourceGroups: [example.com/x]}")
    assert error_at(err, f"{ARGS}.ignoredResources[0]").kind is ErrorKind.INVALID
    assert "can't contain '/'" in error_at(err, f"{ARGS}.ignoredResourceGroups[0]").detail


def test_balanced_allocation_weights_must_be_one_and_resources_distinct() -> None:
    err = plugin_args(
        "NodeResourcesBalancedAllocation", "{resources: [{name: cpu, weight: 2}, {name: cpu}]}"
    )
    assert error_at(err, f"{ARGS}.resources[0].weight").detail == "must be 1"
    assert error_at(err, f"{ARGS}.resources[1].name").kind is ErrorKind.DUPLICATE


def spread_args(args: str) -> ConfigError:
    return plugin_args("PodTopologySpread", args)


def test_system_defaulting_refuses_constraints() -> None:
    err = spread_args(
        "{defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}"
    )
    assert (
        "when .defaultConstraints are not empty" in error_at(err, f"{ARGS}.defaultingType").detail
    )


def test_bad_defaulting_type() -> None:
    e = error_at(spread_args("{defaultingType: Cluster}"), f"{ARGS}.defaultingType")
    assert e.accepted == ("List", "System")


def test_bad_default_constraints() -> None:
    err = spread_args(
        "{defaultingType: List, defaultConstraints: ["
        "{maxSkew: 0, topologyKey: '', whenUnsatisfiable: Maybe, labelSelector: {}},"
        "{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, nodeTaintsPolicy: Skip},"
        "{maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomains: 0}]}"
    )
    c = f"{ARGS}.defaultConstraints"
    assert "(0, inf)" in error_at(err, f"{c}[0].maxSkew").detail
    assert error_at(err, f"{c}[0].topologyKey").kind is ErrorKind.REQUIRED
    assert error_at(err, f"{c}[0].whenUnsatisfiable").accepted == (
        "DoNotSchedule",
        "ScheduleAnyway",
    )
    assert error_at(err, f"{c}[0].labelSelector").kind is ErrorKind.FORBIDDEN
    assert error_at(err, f"{c}[1].nodeTaintsPolicy").accepted == ("Honor", "Ignore")
    assert error_at(err, f"{c}[2]").kind is ErrorKind.DUPLICATE
    assert "greater than 0" in error_at(err, f"{c}[2].minDomains").detail


def test_hard_pod_affinity_weight_range() -> None:
    err = plugin_args("InterPodAffinity", "{hardPodAffinityWeight: 101}")
    assert "[0, 100]" in error_at(err, f"{ARGS}.hardPodAffinityWeight").detail


def test_default_preemption_bounds() -> None:
    err = plugin_args(
        "DefaultPreemption", "{minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}"
    )
    assert (
        "cannot be zero at the same time"
        in error_at(err, f"{ARGS}.minCandidateNodesPercentage").detail
    )
    assert (
        "cannot be zero at the same time"
        in error_at(err, f"{ARGS}.minCandidateNodesAbsolute").detail
    )
    err = plugin_args(
        "DefaultPreemption", "{minCandidateNodesPercentage: 101, minCandidateNodesAbsolute: -1}"
    )
    assert "[0, 100]" in error_at(err, f"{ARGS}.minCandidateNodesPercentage").detail
    assert "[0, inf)" in error_at(err, f"{ARGS}.minCandidateNodesAbsolute").detail


def test_bad_added_affinity() -> None:
    err = refused(
        """
        profiles:
        - pluginConfig:
          - name: NodeAffinity
            args:
              addedAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions:
                    - {key: a, operator: Has, values: [x]}
                    - {key: b, operator: Gt, values: ["many"]}
                    - {key: c, operator: In}
                    - {key: d, operator: Exists, values: [x]}
                    matchFields:
                    - {key: metadata.labels, operator: In, values: [x]}
                    - {key: metadata.name, operator: Exists}
                preferredDuringSchedulingIgnoredDuringExecution:
                - {weight: 0, preference: {}}
        """
    )
    aff = f"{ARGS}.addedAffinity"
    term = f"{aff}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
    e = error_at(err, f"{term}.matchExpressions[0].operator")
    assert e.accepted == ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")
    assert "integer" in error_at(err, f"{term}.matchExpressions[1].values[0]").detail
    assert "must not be empty" in error_at(err, f"{term}.matchExpressions[2].values").detail
    assert "must be empty" in error_at(err, f"{term}.matchExpressions[3].values").detail
    assert error_at(err, f"{term}.matchFields[0].key").accepted == ("metadata.name",)
    assert error_at(err, f"{term}.matchFields[1].operator").accepted == ("In", "NotIn")
    assert (
        "1-100"
        in error_at(err, f"{aff}.preferredDuringSchedulingIgnoredDuringExecution[0].weight").detail
    )


def test_volume_binding_shape_needs_its_feature_gate() -> None:
    err = plugin_args(
        "VolumeBinding", "{bindTimeoutSeconds: -1, shape: [{utilization: 0, score: 0}]}"
    )
    assert "negative" in error_at(err, f"{ARGS}.bindTimeoutSeconds").detail
    assert "StorageCapacityScoring" in error_at(err, f"{ARGS}.shape").detail


def test_dynamic_resources_filter_timeout_must_not_be_negative() -> None:
    err = plugin_args("DynamicResources", "{filterTimeout: -1s}")
    problem = error_at(err, f"{ARGS}.filterTimeout")
    assert problem.value == "-1s" and "zero or positive" in problem.detail


def test_every_problem_is_reported_at_once() -> None:
    err = refused(
        """
        foo: 1
        parallelism: 0
        leaderElection: {leaseDuration: 15}
        profiles:
        - schedulerName: a
          plugins: {score: {enabled: [{name: Nope}]}}
        - schedulerName: a
        """
    )
    assert set(err.paths) >= {
        "foo",
        "parallelism",
        "leaderElection.leaseDuration",
        "profiles[0].plugins.score.enabled[0].name",
        "profiles[1].schedulerName",
    }
    text = str(err)
    assert text.startswith("invalid configuration <string>:")
    assert all(p in text for p in err.paths)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read file"):
        load_config(tmp_path / "absent.yaml")


def test_file_that_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_config(path)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(HEADER + "parallelism: -3\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value)
    assert info.value.paths == ["parallelism"]


def test_a_plugin_with_the_generic_args_reader_reports_its_models_problems() -> None:
    # NodePool (core/plugins/node_pool.py) has no reader of its own in sched/config/args.py.
    e = error_at(plugin_args("NodePool", "{label: 'not a/label/key'}"), f"{ARGS}.label")
    assert e.kind is ErrorKind.INVALID and e.value == "not a/label/key"
    e = error_at(plugin_args("NodePool", "{labels: x}"), f"{ARGS}.labels")
    assert e.kind is ErrorKind.UNKNOWN_FIELD and e.accepted == ("apiVersion", "kind", "label")
    e = error_at(plugin_args("NodePool", "{label: 3}"), f"{ARGS}.label")
    assert "string" in e.detail


def test_list_args_of_the_generic_reader_are_read_and_checked() -> None:
    config = parse_config(
        HEADER
        + textwrap.dedent(
            """\
            profiles:
            - plugins: {score: {enabled: [{name: NodeLabelPreference, weight: 2}]}}
              pluginConfig:
              - {name: NodeLabelPreference, args: {present: [example.com/ssd], absent: [spot]}}
            """
        )
    )
    core = config.profiles[0].core
    assert dict(core.scores)["NodeLabelPreference"] == 2
    args = core.args_of("NodeLabelPreference")
    assert (args.present, args.absent) == (("example.com/ssd",), ("spot",))
    e = error_at(plugin_args("NodeLabelPreference", "{present: ssd}"), f"{ARGS}.present")
    assert e.kind is not ErrorKind.REQUIRED
    e = error_at(plugin_args("NodeLabelPreference", "{absent: [a, a]}"), f"{ARGS}.absent[1]")
    assert e.kind is ErrorKind.DUPLICATE
    e = error_at(plugin_args("NodeLabelPreference", "{absent: []}"), f"{ARGS}.present")
    assert e.kind is ErrorKind.REQUIRED
