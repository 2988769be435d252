"""``/configz``: durations written as Go writes them, the defaulted configuration under
kube-scheduler's field names; and on the real control plane, kubesalvo's page next to
upstream kube-scheduler's, both read through their secure ports' authorization."""

from __future__ import annotations

import json
import secrets

import pytest

from kubesalvo.sched.cluster import start_kube_scheduler
from kubesalvo.sched.config import gates, load_config
from kubesalvo.sched.serving.configz import componentconfig, go_duration
from tests.helpers.deploy import bind_rules, delete_cluster_rbac, service_account_token
from tests.sched.test_app import CONFIG, SchedulerProcess, free_port
from tests.sched.test_metrics_upstream import upstream_metrics
from tests.sched.web.test_web_view_secure import get

CONFIGZ_READER = [{"nonResourceURLs": ["/configz"], "verbs": ["get"]}]


# A profile that changes its plugins at several points (deploy/config/multi-profile.yaml's).
BINPACK = {
    "multiPoint": {
        "disabled": [{"name": "ImageLocality"}, {"name": "NodeResourcesBalancedAllocation"}]
    },
    "postFilter": {"disabled": [{"name": "DefaultPreemption"}]},
    "score": {"enabled": [{"name": "NodeResourcesFit", "weight": 5}]},
}

# A third profile's args, one of each shape /configz writes (upstream keeps a list's order
# as given: ignoredResources is given unsorted to show it).
CUSTOM_ARGS = [
    {"name": "NodeResourcesFit", "args": {
        "ignoredResources": ["example.com/b", "example.com/a"],
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 2}],
            "requestedToCapacityRatio": {"shape": [
                {"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}}},
    {"name": "PodTopologySpread", "args": {
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 2, "topologyKey": "topology.kubernetes.io/zone",
                                "whenUnsatisfiable": "ScheduleAnyway"}]}},
    {"name": "DefaultPreemption", "args": {
        "minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": 50}},
    {"name": "DynamicResources", "args": {"filterTimeout": "1m30s"}},
    {"name": "NodeAffinity", "args": {"addedAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]}}}},
]  # fmt: skip


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (15, "15s"),
        (2.5, "2.5s"),
        (90, "1m30s"),
        (300, "5m0s"),
        (3600, "1h0m0s"),
        (0.01, "10ms"),
        (0.0015, "1.5ms"),
    ],
)
def test_durations_are_written_as_go_writes_them(seconds, text):
    assert go_duration(seconds) == text


def test_the_default_configuration_is_listed_under_upstream_field_names():
    listed = componentconfig(load_config(None))
    assert listed["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert listed["Parallelism"] == 16
    assert listed["PercentageOfNodesToScore"] == 0
    assert listed["LeaderElection"]["LeaseDuration"] == "15s"
    (profile,) = listed["Profiles"]
    assert (profile["SchedulerName"], profile["PercentageOfNodesToScore"]) == ("kubesalvo", None)
    plugins = profile["Plugins"]
    # The defaults live under MultiPoint, as upstream's defaulting leaves them; VolumeBinding
    # has no weight written there.
    multi = {p["Name"]: p["Weight"] for p in plugins.pop("MultiPoint")["Enabled"]}
    assert multi["TaintToleration"] == 3 and multi["VolumeBinding"] == 0
    assert list(multi)[:2] == ["SchedulingGates", "PrioritySort"]
    assert all(s == {"Enabled": None, "Disabled": None} for s in plugins.values())
    assert len(plugins) == 12
    assert listed["Kubesalvo"]["BurstGatheringWindow"] == "10ms"


def test_volume_bindings_shape_is_listed_only_with_its_feature_gate():
    def volume_binding(config):
        (profile,) = componentconfig(config)["Profiles"]
        (entry,) = [c for c in profile["PluginConfig"] if c["Name"] == "VolumeBinding"]
        return entry["Args"]

    assert volume_binding(load_config(None))["Shape"] is None
    on = load_config(None, gates.parse("StorageCapacityScoring=true"))
    assert volume_binding(on) == {
        "BindTimeoutSeconds": 600,
        "Shape": [{"Utilization": 0, "Score": 10}, {"Utilization": 100, "Score": 0}],
    }


@pytest.mark.integration
def test_configz_has_kube_schedulers_fields_and_is_behind_authorization(
    control_plane, namespace, tmp_path
):
    reader = service_account_token(control_plane, namespace, "configz-reader")
    role = bind_rules(control_plane, namespace, "configz-reader", CONFIGZ_READER)
    upstream_name = f"upstream-{secrets.token_hex(3)}"
    upstream = start_kube_scheduler(
        control_plane,
        # The test configuration's backoff (kubesalvo's reads CONFIG); the same two
        # profiles, the second with plugins of its own.
        extra={
            "podMaxBackoffSeconds": 2,
            "profiles": [
                {"schedulerName": upstream_name},
                {"schedulerName": f"{upstream_name}-b", "plugins": BINPACK},
                {"schedulerName": f"{upstream_name}-c", "pluginConfig": CUSTOM_ARGS},
            ],
        },
        name=upstream_name,
    )
    ours_name = f"kubesalvo-{secrets.token_hex(3)}"
    config = (
        CONFIG.format(max_burst=100)
        + f"profiles:\n- schedulerName: {ours_name}\n- schedulerName: {ours_name}-b\n"
        + f"  plugins: {json.dumps(BINPACK)}\n"
        + f"- schedulerName: {ours_name}-c\n"
        + f"  pluginConfig: {json.dumps(CUSTOM_ARGS)}\n"
    )
    port = free_port()
    args = ("--secure-port", str(port), "--bind-address", "127.0.0.1")
    ours = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "configz", args)
    try:
        ours.wait_ready()
        url = f"https://127.0.0.1:{port}/configz"
        status, body = get(url, reader)
        assert status == 200, body
        mine = json.loads(body)["componentconfig"]
        theirs = json.loads(
            upstream_metrics(upstream.metrics_url.replace("/metrics", "/configz"), reader)
        )["componentconfig"]
        assert set(theirs) <= set(mine)
        assert set(theirs["LeaderElection"]) == set(mine["LeaderElection"])
        assert set(theirs["ClientConnection"]) == set(mine["ClientConnection"])
        # Values both configurations set alike or leave to the defaults.
        for key in (
            "apiVersion",
            "Parallelism",
            "EnableProfiling",
            "EnableContentionProfiling",
            "PercentageOfNodesToScore",
            "PodInitialBackoffSeconds",
            "PodMaxBackoffSeconds",
            "Extenders",
            "DelayCacheUntilActive",
        ):
            assert mine[key] == theirs[key], key
        for key in ("LeaderElect", "LeaseDuration", "RenewDeadline", "RetryPeriod", "ResourceLock"):
            assert mine["LeaderElection"][key] == theirs["LeaderElection"][key], key
        assert mine["ClientConnection"]["QPS"] == theirs["ClientConnection"]["QPS"]
        assert [p["SchedulerName"] for p in theirs["Profiles"]] == [
            upstream_name,
            f"{upstream_name}-b",
            f"{upstream_name}-c",
        ]
        assert [p["SchedulerName"] for p in mine["Profiles"]] == [
            ours_name,
            f"{ours_name}-b",
            f"{ours_name}-c",
        ]
        for profile, upstream_profile in zip(mine["Profiles"], theirs["Profiles"], strict=True):
            assert profile["PercentageOfNodesToScore"] is None
            # Every point's set after defaulting, as kube-scheduler holds it.
            assert profile["Plugins"] == upstream_profile["Plugins"]
            # Every plugin's args after defaulting, in upstream's order and field names.
            assert profile["PluginConfig"] == upstream_profile["PluginConfig"]
        assert get(url)[0] == 403  # system:anonymous
        assert get(url, "not-a-token")[0] == 401
        # The insecure metrics port does not serve it.
        assert ours.get(f"http://127.0.0.1:{ours.metrics_port}/configz")[0] == 404
    finally:
        ours.kill()
        upstream.stop()
        delete_cluster_rbac(control_plane, role)
