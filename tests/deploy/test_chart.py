"""deploy/chart: linted by helm, rendered, compared with deploy/'s kustomizations object by
object, applied to the real API server (server-side dry run with strict validation) and
installed on it with `helm install`.

The comparison: the chart's default values render the objects of `kubectl kustomize
deploy/`, and the values of each overlay's layout (replicas 2, mode extender, the image
reporter, the ServiceMonitor) the objects of that overlay. Two differences are allowed, both
from how kustomize names generated ConfigMaps: the hash suffix of a ConfigMap's name (the
chart hashes its own data the same way, so a changed configuration also rolls the pods),
and the data's text, compared as parsed YAML (the files in deploy/ carry comments).
"""

from __future__ import annotations

import json
import re
import secrets
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesalvo.sched.binder import BindOutcome
from kubesalvo.sched.config import load_config
from tests.deploy.test_dashboard import missing, scrape, selectors  # noqa: F401 (fixture)
from tests.helpers.deploy import DEPLOY, find, install_monitoring_crds, kubectl, render
from tests.helpers.helm import CHART, helm_binary, run_helm, template
from tests.helpers.promql import parse_errors

pytestmark = pytest.mark.integration

OVERLAYS = DEPLOY / "overlays"
# Each layout of deploy/ and the chart values that give it.
LAYOUTS: dict[str, tuple[Path, dict[str, Any]]] = {
    "default": (DEPLOY, {}),
    "ha": (OVERLAYS / "ha", {"replicas": 2}),
    "extender": (OVERLAYS / "extender", {"mode": "extender"}),
    "image-reporter": (
        DEPLOY / "overlays" / "image-reporter",
        {"imageReporter": {"enabled": True}},
    ),
    "servicemonitor": (
        DEPLOY / "overlays" / "servicemonitor",
        {"serviceMonitor": {"enabled": True}},
    ),
}
# Values far from the defaults: kubesalvo replaces the default scheduler with three replicas
# and two profiles, in a namespace of the release's, with every optional object on.
EVERYTHING = {
    "schedulerName": "default-scheduler",
    "replicas": 3,
    "leaderElection": {"leaseName": "kubesalvo-main"},
    "profiles": [
        {"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
            "type": "MostAllocated"}}}]},
        {"schedulerName": "kubesalvo-spread", "plugins": {"score": {"disabled": [
            {"name": "ImageLocality"}]}}},
    ],
    "extraConfig": {"podInitialBackoffSeconds": 2, "podMaxBackoffSeconds": 20},
    "imageReporter": {"enabled": True, "interval": "1m"},
    "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
    "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
}  # fmt: skip
MONITORING_CRDS = ("servicemonitors", "prometheusrules")
FIELD_MANAGER = "kubesalvo-chart-test"
HASHED = re.compile(r"^(kubesalvo-config|kube-scheduler-config|kubesalvo-extender-config)-\w{10}$")


@pytest.fixture(scope="module")
def helm() -> Path:
    return helm_binary()


# --- the chart against the kustomizations -------------------------------------------------


def unhashed(name: str) -> str:
    match = HASHED.match(name)
    return match[1] if match else name


def comparable(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], Any]:
    """Objects by kind, namespace and name, generated names without their hash and
    ConfigMap data parsed."""
    found = {}
    for obj in json.loads(json.dumps(objects)):  # a deep copy
        meta = obj["metadata"]
        meta["name"] = unhashed(meta["name"])
        if obj["kind"] == "ConfigMap":
            obj["data"] = {k: yaml.safe_load(v) for k, v in obj["data"].items()}
        if obj["kind"] in ("Deployment", "DaemonSet"):
            for volume in obj["spec"]["template"]["spec"].get("volumes", []):
                if "configMap" in volume:
                    volume["configMap"]["name"] = unhashed(volume["configMap"]["name"])
        key = (obj["kind"], meta.get("namespace", ""), meta["name"])
        assert key not in found, key
        found[key] = obj
    return found


def test_unhashed_strips_only_generated_suffixes():
    assert unhashed("kubesalvo-config-74hc79826g") == "kubesalvo-config"
    assert unhashed("kube-scheduler-config-0123456789") == "kube-scheduler-config"
    assert unhashed("kubesalvo-config") == "kubesalvo-config"
    assert unhashed("kubesalvo-metrics") == "kubesalvo-metrics"


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_chart_renders_the_objects_of_each_kustomize_layout(control_plane, helm, layout):
    folder, values = LAYOUTS[layout]
    expected = comparable(render(control_plane, folder))
    if layout == "extender":
        # The overlay keeps the base's ConfigMap for `kubesalvo run`, which no pod of that
        # layout mounts; the chart leaves it out.
        del expected[("ConfigMap", "kubesalvo", "kubesalvo-config")]
    got = comparable(template(helm, values))
    assert sorted(got) == sorted(expected)
    for key, obj in expected.items():
        assert got[key] == obj, key


def test_the_chart_hashes_its_configuration_into_the_configmaps_name(helm):
    def name(values: dict[str, Any]) -> str:
        (configmap,) = [o for o in template(helm, values) if o["kind"] == "ConfigMap"]
        deployment = find(template(helm, values), "Deployment", "kubesalvo")
        (volume,) = [
            v for v in deployment["spec"]["template"]["spec"]["volumes"] if "configMap" in v
        ]
        assert volume["configMap"]["name"] == configmap["metadata"]["name"]
        return str(configmap["metadata"]["name"])

    assert name({}) != name({"clientConnection": {"qps": 100, "burst": 200}})
    assert name({}) == name({"serviceMonitor": {"enabled": True}})


def test_the_charts_versions_are_the_packages(helm):
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    version = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text())["project"]["version"]
    assert chart["appVersion"] == version


# --- helm lint, values refused ------------------------------------------------------------


@pytest.mark.parametrize("values", [{}, EVERYTHING, {"mode": "extender", "replicas": 2}])
def test_helm_lint_passes(helm, values):
    out = run_helm(helm, "lint", "--strict", str(CHART), values=values)
    assert "0 chart(s) failed" in out, out


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"replicas": 2, "leaderElection": {"enabled": False}}, "needs leaderElection.enabled"),
        ({"replicas": 0}, "replicas must be at least 1"),
        ({"mode": "webhook"}, 'mode must be "scheduler" or "extender"'),
    ],
)
def test_values_that_cannot_work_are_refused_when_rendering(helm, values, message):
    with pytest.raises(AssertionError, match=re.escape(message)):
        template(helm, values)


def scheduler_config(objects: list[dict[str, Any]], tmp_path: Path) -> Any:
    (configmap,) = [o for o in objects if o["kind"] == "ConfigMap"]
    path = tmp_path / "config.yaml"
    path.write_text(configmap["data"]["config.yaml"])
    return load_config(str(path))


def test_the_profiles_and_lease_of_the_values_are_the_configuration_kubesalvo_loads(helm, tmp_path):
    objects = template(helm, EVERYTHING)
    config = scheduler_config(objects, tmp_path)
    assert list(config.scheduler_names) == ["default-scheduler", "kubesalvo-spread"]
    assert config.leader_election.leader_elect
    assert config.leader_election.resource_name == "kubesalvo-main"
    role = find(objects, "Role", "kubesalvo:leader-election")
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert named[0]["resourceNames"] == ["kubesalvo-main"]
    settings = yaml.safe_load(find_configmap(objects)["data"]["config.yaml"])
    assert settings["podInitialBackoffSeconds"] == 2
    fit = settings["profiles"][0]["pluginConfig"][0]
    assert fit["args"]["scoringStrategy"]["type"] == "MostAllocated"
    deployment = find(objects, "Deployment", "kubesalvo")
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}


def find_configmap(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (configmap,) = [o for o in objects if o["kind"] == "ConfigMap"]
    return configmap


def test_leader_election_off_is_written_as_such_for_one_replica(helm, tmp_path):
    config = scheduler_config(template(helm, {"leaderElection": {"enabled": False}}), tmp_path)
    assert not config.leader_election.leader_elect


# --- against the real API server ----------------------------------------------------------


@pytest.fixture(scope="module")
def monitoring_crds(control_plane) -> None:
    """The Prometheus Operator's ServiceMonitor and PrometheusRule CRDs, from its Go module,
    installed (server-side apply: they are too large for client-side apply) and Established."""
    install_monitoring_crds(control_plane, MONITORING_CRDS, FIELD_MANAGER, "--force-conflicts")


def apply(control_plane: Any, objects: list[dict[str, Any]], *flags: str) -> str:
    path = Path(control_plane.dir) / f"chart-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    try:
        return kubectl(control_plane, "apply", "--server-side", "--validate=strict",
                       f"--field-manager={FIELD_MANAGER}", *flags, "-f", str(path))  # fmt: skip
    finally:
        path.unlink()


@pytest.mark.parametrize(
    "values",
    [{}, EVERYTHING, {"mode": "extender", "replicas": 2, "prometheusRule": {"enabled": True}}],
    ids=["default", "everything", "extender-ha"],
)
def test_every_rendered_object_passes_a_server_side_dry_run(
    control_plane, monitoring_crds, helm, values
):
    """Each object, with strict field validation and the API server's admission (Pod
    Security of the namespace's labels included, for the pods of the workloads)."""
    namespace = f"chart-dry-{secrets.token_hex(3)}"
    objects = template(helm, {**values, "namespace": {"name": namespace, "create": True}})
    apply(control_plane, [o for o in objects if o["kind"] == "Namespace"])
    try:
        out = apply(control_plane, objects, "--dry-run=server")
        assert len(out.strip().splitlines()) == len(objects), out
        labels = find(objects, "Namespace", namespace)["metadata"]["labels"]
        for workload in (o for o in objects if o["kind"] in ("Deployment", "DaemonSet")):
            template_ = workload["spec"]["template"]
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": workload["metadata"]["name"], "namespace": namespace,
                                "labels": template_["metadata"]["labels"]},
                   "spec": template_["spec"]}  # fmt: skip
            # Refused (kubectl fails) if the namespace's enforced level forbids the pod.
            out = apply(control_plane, [pod], "--dry-run=server")
            assert "serverside-applied" in out, out
        assert labels["pod-security.kubernetes.io/enforce"] == (
            "privileged" if values.get("imageReporter") else "restricted"
        )
    finally:
        kubectl(control_plane, "delete", "namespace", namespace, "--wait=false")


@pytest.fixture
def release(control_plane, helm) -> Iterator[str]:
    """A release name whose objects go to a namespace of its own; uninstalled afterwards."""
    namespace = f"chart-install-{secrets.token_hex(3)}"
    yield namespace
    run_helm(helm, f"--kubeconfig={control_plane.kubeconfig}", "uninstall", "kubesalvo",
             f"--namespace={namespace}", "--ignore-not-found", "--wait")  # fmt: skip
    kubectl(control_plane, "delete", "namespace", namespace, "--ignore-not-found", "--wait=false")


def test_helm_install_creates_the_deployment_and_its_rbac(control_plane, helm, release):
    run_helm(helm, f"--kubeconfig={control_plane.kubeconfig}", "install", "kubesalvo",
             str(CHART), f"--namespace={release}", "--create-namespace",
             values={"namespace": {"name": "", "create": False}})  # fmt: skip
    deployment = json.loads(
        kubectl(control_plane, "get", "deployment/kubesalvo", f"--namespace={release}", "-o=json")
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:2] == ["run", "--config=/etc/kubesalvo/config.yaml"]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "kubesalvo"
    for kind, name in [("serviceaccount", "kubesalvo"), ("role", "kubesalvo:leader-election"),
                       ("rolebinding", "kubesalvo:leader-election")]:  # fmt: skip
        kubectl(control_plane, "get", f"{kind}/{name}", f"--namespace={release}")
    binding = json.loads(
        kubectl(control_plane, "get", "clusterrolebinding/kubesalvo:scheduler", "-o=json")
    )
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kubesalvo", "namespace": release}
    ]
    kubectl(control_plane, "get", "clusterrole/kubesalvo:scheduler")
    # The service account may do what the scheduler needs, as the API server decides.
    user = f"system:serviceaccount:{release}:kubesalvo"
    for verb, resource, *sub in [
        ("create", "pods", "--subresource=binding"),
        ("patch", "pods", "--subresource=status"),
        ("watch", "nodes"),
    ]:
        answer = kubectl(control_plane, "auth", "can-i", verb, resource, *sub, f"--as={user}")
        assert answer.strip() == "yes", (verb, resource, sub)
    status = json.loads(run_helm(helm, f"--kubeconfig={control_plane.kubeconfig}", "status",
                                 "kubesalvo", f"--namespace={release}", "-o=json"))  # fmt: skip
    assert status["info"]["status"] == "deployed"


# --- the PrometheusRule's expressions against a real scrape --------------------------------


def test_every_alert_names_only_series_kubesalvo_exports(helm, scrape):  # noqa: F811
    """Rendered with the lease name of the scraped scheduler, every series each alert
    selects, with its exact labels, is in the scrape; a bind result that did not happen
    during the scrape must be one of the binder's outcomes."""
    (lease,) = {labels["name"] for labels in scrape["leader_election_master_status"]}
    values = {"prometheusRule": {"enabled": True}, "leaderElection": {"leaseName": lease}}
    rule = find(template(helm, values), "PrometheusRule", "kubesalvo")
    alerts = {r["alert"]: r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]}
    assert set(alerts) >= {"KubesalvoNoLeader", "KubesalvoPendingPodsGrowing",
                           "KubesalvoBindErrors", "KubesalvoSchedulingSLOViolated"}  # fmt: skip
    outcomes = {outcome.value for outcome in BindOutcome}
    for alert, expr in alerts.items():
        named = selectors(expr)
        assert named, alert
        for name, labels in named:
            if name == "kubesalvo_binds_total" and labels.get("result") in outcomes:
                labels = {k: v for k, v in labels.items() if k != "result"}
            assert not missing(scrape, name, labels), (alert, name, labels)


def test_every_alert_parses_with_prometheus_parser(helm):
    values = {"prometheusRule": {"enabled": True}}
    for extra in ({}, {"prometheusRule": {"enabled": True, "pendingFor": "1h", "sloRatio": 0.9}}):
        rule = find(template(helm, {**values, **extra}), "PrometheusRule", "kubesalvo")
        exprs = [r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]]
        assert len(exprs) == 5
        assert parse_errors(exprs) == ""
    # The checker does refuse what is not PromQL.
    assert "expression 0" in parse_errors(["sum(rate(up[5m])"])


def test_in_extender_mode_the_extenders_metrics_port_is_served_opened_and_scraped(helm):
    objects = template(helm, {"mode": "extender", "serviceMonitor": {"enabled": True}})
    pod = find(objects, "Deployment", "kubesalvo-extender")["spec"]["template"]["spec"]
    (container,) = [c for c in pod["containers"] if c["name"] == "extender"]
    assert "--metrics-secure-port=10260" in container["args"]
    assert container["ports"] == [
        {"name": "https-extender", "containerPort": 10260, "protocol": "TCP"}
    ]
    service = find(objects, "Service", "kubesalvo-metrics")
    assert [p["name"] for p in service["spec"]["ports"]] == ["https-metrics", "https-extender"]
    policy = find(objects, "NetworkPolicy", "kubesalvo-scheduler")
    assert [p["port"] for p in policy["spec"]["ingress"][0]["ports"]] == [
        "https-metrics",
        "https-extender",
    ]
    monitor = find(objects, "ServiceMonitor", "kubesalvo")
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["https-metrics", "https-extender"]
    # The scheduler mode has none of it.
    plain = template(helm, {"serviceMonitor": {"enabled": True}})
    monitor = find(plain, "ServiceMonitor", "kubesalvo")
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["https-metrics"]
