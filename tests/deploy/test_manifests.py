"""deploy/'s kustomizations, rendered by the kubectl that `kubesalvo cluster build`
compiles and applied to the real API server with server-side apply and strict field
validation: first as a server-side dry run (every object, every variant), then for real,
and read back. The ServiceMonitor's schema is the Prometheus Operator's own CRD, taken
from its Go module (as `cluster build` takes kwok's stage files from kwok's) and installed
with server-side apply (the CRD is too large for client-side apply's annotation).

No kubelet runs here: the pods the Deployments and the DaemonSet ask for are created by
the real controllers but never run. What is checked without one: the objects' schemas and
admission, the pod security settings the issue asks for, the configuration files (loaded
by kubesalvo's own loader and by the real kube-scheduler), and that names and ports agree
between the Deployment, the Service, the ServiceMonitor and the Prometheus scrape config.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesalvo.core.quantity import value
from kubesalvo.sched.cluster import processes
from kubesalvo.sched.config import load_config
from tests.helpers.deploy import DEPLOY, find, install_monitoring_crds, kubectl, render

pytestmark = pytest.mark.integration

VARIANTS = {
    "default": DEPLOY,
    "base": DEPLOY / "base",
    "servicemonitor": DEPLOY / "overlays" / "servicemonitor",
    "ha": DEPLOY / "overlays" / "ha",
    "extender": DEPLOY / "overlays" / "extender",
    "image-reporter": DEPLOY / "overlays" / "image-reporter",
}
FIELD_MANAGER = "kubesalvo-deploy-test"


@pytest.fixture(scope="module")
def servicemonitor_crd(control_plane) -> None:
    """The Prometheus Operator's ServiceMonitor CRD, installed and Established."""
    install_monitoring_crds(control_plane, ("servicemonitors",), FIELD_MANAGER)


def apply(control_plane: Any, objects: list[dict[str, Any]], *flags: str) -> str:
    """Server-side apply with strict validation (unknown or duplicate fields are errors)."""
    path = Path(control_plane.dir) / f"apply-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    try:
        return kubectl(
            control_plane,
            "apply",
            "--server-side",
            "--validate=strict",
            f"--field-manager={FIELD_MANAGER}",
            *flags,
            "-f",
            str(path),
        )
    finally:
        path.unlink()


@pytest.fixture(scope="module")
def rendered(control_plane) -> dict[str, list[dict[str, Any]]]:
    return {name: render(control_plane, folder) for name, folder in VARIANTS.items()}


def workloads(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] in ("Deployment", "DaemonSet")]


# --- server-side dry run and real apply ---------------------------------------------------


@pytest.fixture(scope="module")
def target_namespace(control_plane, rendered) -> Iterator[None]:
    """The Namespace applied for real: a dry run creates nothing, so the namespaced objects
    of the same dry run would find no namespace to go in."""
    namespaces = [o for o in rendered["default"] if o["kind"] == "Namespace"]
    apply(control_plane, namespaces)
    yield
    kubectl(control_plane, "delete", "namespace/kubesalvo", "--ignore-not-found", "--wait=false")


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_object_passes_a_server_side_dry_run(
    control_plane, servicemonitor_crd, target_namespace, rendered, variant
):
    objects = rendered[variant]
    out = apply(control_plane, objects, "--dry-run=server")
    # One line per object, each applied (or unchanged) by the server.
    assert len(out.strip().splitlines()) == len(objects), out
    for obj in objects:
        assert f"{obj['kind'].lower()}" in out.lower()


@pytest.fixture
def cleanup(control_plane, rendered) -> Iterator[None]:
    yield
    kinds = {
        (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
        for objects in rendered.values()
        for o in objects
    }
    for kind, name, namespace in sorted(kinds, key=lambda k: k[0] == "Namespace"):
        args = ["delete", kind, name, "--ignore-not-found", "--wait=false"]
        if namespace:
            args.append(f"--namespace={namespace}")
        kubectl(control_plane, *args)
    kubectl(control_plane, "wait", "--for=delete", "namespace/kubesalvo", "--timeout=120s")


def test_every_variant_applies_for_real_and_reads_back(
    control_plane, servicemonitor_crd, rendered, cleanup
):
    for variant in VARIANTS:
        apply(control_plane, rendered[variant])
        for obj in rendered[variant]:
            args = ["get", obj["kind"], obj["metadata"]["name"], "-o=json", "--show-managed-fields"]
            if obj["metadata"].get("namespace"):
                args.append(f"--namespace={obj['metadata']['namespace']}")
            stored = json.loads(kubectl(control_plane, *args))
            assert stored["metadata"]["name"] == obj["metadata"]["name"]
            managers = {m["manager"] for m in stored["metadata"].get("managedFields", [])}
            assert FIELD_MANAGER in managers, (variant, obj["kind"], obj["metadata"]["name"])
        if variant == "ha":
            stored = json.loads(
                kubectl(control_plane, "get", "deployment/kubesalvo", "-n=kubesalvo", "-o=json")
            )
            assert stored["spec"]["replicas"] == 2
        if variant == "image-reporter":
            # Its pods would go to every node of the session: remove it at once.
            kubectl(
                control_plane,
                "delete",
                "daemonset/kubesalvo-image-reporter",
                "--namespace=kubesalvo",
                "--cascade=foreground",
                "--timeout=120s",
            )


# --- what the objects say -----------------------------------------------------------------


def test_the_default_install_holds_what_the_issue_lists(rendered):
    kinds = {(o["kind"], o["metadata"]["name"]) for o in rendered["default"]}
    for expected in [
        ("Namespace", "kubesalvo"),
        ("ServiceAccount", "kubesalvo"),
        ("ClusterRole", "kubesalvo:scheduler"),
        ("ClusterRoleBinding", "kubesalvo:scheduler"),
        ("Role", "kubesalvo:leader-election"),
        ("RoleBinding", "kubesalvo:leader-election"),
        ("ClusterRole", "kubesalvo:metrics-reader"),
        ("Deployment", "kubesalvo"),
        ("PodDisruptionBudget", "kubesalvo"),
        ("Service", "kubesalvo-metrics"),
    ]:
        assert expected in kinds, expected
    assert any(k == "ConfigMap" and n.startswith("kubesalvo-config-") for k, n in kinds)


def test_the_default_install_needs_no_custom_resource_definition(control_plane, rendered):
    """`kubectl apply -k deploy/` on a bare cluster: every kind it holds is one the API
    server serves by itself (the groups of installed CRDs, such as the ServiceMonitor's,
    which tests here install, do not count)."""
    crds = json.loads(kubectl(control_plane, "get", "crd", "-o=json"))["items"]
    custom = {crd["spec"]["group"] for crd in crds}
    served = set(kubectl(control_plane, "api-versions").split())
    for obj in rendered["default"]:
        group = obj["apiVersion"].rpartition("/")[0]
        assert obj["apiVersion"] in served and group not in custom, (obj["kind"], obj["apiVersion"])


def test_the_servicemonitor_is_opt_in(rendered):
    monitors = [o for o in rendered["servicemonitor"] if o["kind"] == "ServiceMonitor"]
    assert [m["metadata"]["name"] for m in monitors] == ["kubesalvo"]
    assert not any(o["kind"] == "ServiceMonitor" for o in rendered["default"])
    # Everything else is the default install's.
    others = [o for o in rendered["servicemonitor"] if o["kind"] != "ServiceMonitor"]
    assert others == rendered["default"]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_container_is_locked_down(rendered, variant):
    for workload in workloads(rendered[variant]):
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in pod["containers"]:
            where = f"{variant}: {workload['metadata']['name']}/{container['name']}"
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, where
            assert security["readOnlyRootFilesystem"] is True, where
            assert security["capabilities"] == {"drop": ["ALL"]}, where
            resources = container["resources"]
            assert set(resources["requests"]) == {"cpu", "memory"}, where
            assert set(resources["limits"]) == {"cpu", "memory"}, where
            # Non-root, the image reporter too (it reaches the CRI socket by its group).
            assert pod["securityContext"]["runAsNonRoot"] is True, where
            assert pod["securityContext"]["runAsUser"] == 65532, where
            if workload["kind"] == "Deployment":
                assert "livenessProbe" in container, where


@pytest.mark.parametrize("variant", ["default", "ha", "extender"])
def test_scheduler_pods_are_critical_spread_and_probed(rendered, variant):
    (deployment,) = [w for w in workloads(rendered[variant]) if w["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["serviceAccountName"] == "kubesalvo"
    labels = deployment["spec"]["selector"]["matchLabels"]
    anti = pod["affinity"]["podAntiAffinity"]
    terms = anti.get("requiredDuringSchedulingIgnoredDuringExecution") or [
        t["podAffinityTerm"] for t in anti["preferredDuringSchedulingIgnoredDuringExecution"]
    ]
    assert terms[0]["labelSelector"]["matchLabels"] == labels
    assert pod["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"] == labels
    serving = pod["containers"][0]
    if variant != "extender":  # kube-scheduler's own container there
        startup = serving["startupProbe"]
        assert startup["httpGet"]["path"] == "/livez"
        assert startup["periodSeconds"] * startup["failureThreshold"] >= 60
        assert "initialDelaySeconds" not in serving["livenessProbe"]
    assert serving["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert serving["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert serving["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert {"name": "https-metrics", "containerPort": 10259, "protocol": "TCP"} in serving["ports"]


def test_ha_runs_two_replicas_on_different_nodes_under_leader_election(rendered, tmp_path):
    deployment = find(rendered["ha"], "Deployment", "kubesalvo")
    assert deployment["spec"]["replicas"] == 2
    anti = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == (
        "kubernetes.io/hostname"
    )
    config = load_scheduler_config(rendered["ha"], tmp_path)
    assert config.leader_election.leader_elect
    lease_role = find(rendered["ha"], "Role", "kubesalvo:leader-election")
    named = [r for r in lease_role["rules"] if r.get("resourceNames")]
    assert named[0]["resourceNames"] == [config.leader_election.resource_name]
    assert lease_role["metadata"]["namespace"] == config.leader_election.resource_namespace


# The scheduler's peak resident memory placing bursts onto 5,000 nodes (bench/RESULTS.md:
# 690-760 MiB); its pod asks for at least that.
MEASURED_PEAK = 760 * 2**20


@pytest.mark.parametrize("variant", ["default", "ha"])
def test_the_memory_request_covers_the_measured_peak(rendered, variant):
    container = find(rendered[variant], "Deployment", "kubesalvo")["spec"]["template"]["spec"][
        "containers"
    ][0]
    requests, limits = container["resources"]["requests"], container["resources"]["limits"]
    assert value(requests["memory"]) >= MEASURED_PEAK
    assert value(limits["memory"]) >= value(requests["memory"])


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_rollout_with_required_anti_affinity_needs_no_extra_node(rendered, variant):
    """With one replica per node required, a surge pod finds no node on a cluster of as
    many nodes as replicas and the rollout stalls: such a Deployment replaces pods in
    place (maxSurge 0, maxUnavailable 1 or more)."""
    for deployment in (o for o in rendered[variant] if o["kind"] == "Deployment"):
        anti = deployment["spec"]["template"]["spec"].get("affinity", {}).get("podAntiAffinity")
        if not (anti or {}).get("requiredDuringSchedulingIgnoredDuringExecution"):
            continue
        rolling = deployment["spec"]["strategy"]["rollingUpdate"]
        assert rolling["maxSurge"] == 0 and rolling["maxUnavailable"] >= 1, (variant, rolling)


def test_ingress_to_the_scheduler_pods_is_their_https_port_only(rendered):
    objects = rendered["default"]
    policy = find(objects, "NetworkPolicy", "kubesalvo-scheduler")
    deployment = find(objects, "Deployment", "kubesalvo")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert "from" not in rule  # Prometheus may sit in any namespace
    service = find(objects, "Service", "kubesalvo-metrics")
    assert rule["ports"] == [
        {"port": port["targetPort"], "protocol": "TCP"} for port in service["spec"]["ports"]
    ]


def test_the_namespace_enforces_the_restricted_pod_security_level(rendered):
    labels = find(rendered["default"], "Namespace", "kubesalvo")["metadata"]["labels"]
    for mode in ("enforce", "audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted", mode
    reporter = find(rendered["image-reporter"], "Namespace", "kubesalvo")["metadata"]["labels"]
    assert reporter["pod-security.kubernetes.io/enforce"] == "privileged"
    assert reporter["pod-security.kubernetes.io/warn"] == "restricted"


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_pod_is_admitted_by_its_namespaces_pod_security_level(
    control_plane, rendered, variant
):
    """The API server's own PodSecurity admission: each workload's pod, created (dry run)
    in a namespace labelled as the variant's, is admitted; a root pod is refused there
    unless the level is privileged."""
    labels = find(rendered[variant], "Namespace", "kubesalvo")["metadata"]["labels"]
    name = f"psa-{variant}-{time.monotonic_ns() % 10**9}"
    apply(control_plane, [{"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": name, "labels": labels}}])  # fmt: skip
    try:
        for workload in workloads(rendered[variant]):
            template = workload["spec"]["template"]
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": workload["metadata"]["name"], "namespace": name,
                                "labels": template["metadata"]["labels"]},
                   "spec": template["spec"]}  # fmt: skip
            out = apply(control_plane, [pod], "--dry-run=server")
            assert "created" in out or "serverside-applied" in out, out
        root = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root", "namespace": name},
                "spec": {"containers": [{"name": "c", "image": "busybox",
                                         "securityContext": {"runAsUser": 0}}]}}  # fmt: skip
        if labels["pod-security.kubernetes.io/enforce"] != "privileged":
            with pytest.raises(AssertionError, match="violates PodSecurity"):
                apply(control_plane, [root], "--dry-run=server")
    finally:
        kubectl(control_plane, "delete", "namespace", name, "--wait=false")


def load_scheduler_config(objects: list[dict[str, Any]], tmp_path: Path) -> Any:
    (configmap,) = [
        o
        for o in objects
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("kubesalvo-config-")
    ]
    path = tmp_path / "config.yaml"
    path.write_text(configmap["data"]["config.yaml"])
    return load_config(str(path))


def test_the_configmap_is_a_configuration_kubesalvo_accepts(rendered, tmp_path):
    config = load_scheduler_config(rendered["default"], tmp_path)
    assert config.scheduler_names == ["kubesalvo"] or list(config.scheduler_names) == ["kubesalvo"]
    deployment = find(rendered["default"], "Deployment", "kubesalvo")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][0] == "run"
    assert "--config=/etc/kubesalvo/config.yaml" in container["args"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["config"] == "/etc/kubesalvo"
    assert mounts["tmp"] == "/tmp"  # the self-signed certificate passes through $TMPDIR


def test_the_extender_variants_kube_scheduler_accepts_its_configuration(
    control_plane, rendered, tmp_path
):
    """The real kube-scheduler validates the configuration, extenders stanza included, and
    writes it back with its defaults (``--write-config-to`` exits before scheduling)."""
    (configmap,) = [
        o
        for o in rendered["extender"]
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("kube-scheduler-config-")
    ]
    settings = yaml.safe_load(configmap["data"]["kube-scheduler.yaml"])
    # In the pod it uses its service account; here the admin's kubeconfig, nothing else
    # changed (it builds its client before it writes the configuration out).
    settings["clientConnection"]["kubeconfig"] = str(control_plane.kubeconfig)
    config = tmp_path / "kube-scheduler.yaml"
    config.write_text(yaml.safe_dump(settings))
    written = tmp_path / "written.yaml"
    done = subprocess.run(
        [
            str(Path(control_plane.bin_dir) / "kube-scheduler"),
            f"--config={config}",
            f"--write-config-to={written}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    extender = yaml.safe_load(written.read_text())["extenders"][0]
    assert extender["urlPrefix"] == "http://127.0.0.1:8888"
    assert extender["nodeCacheCapable"] is True
    deployment = find(rendered["extender"], "Deployment", "kubesalvo-extender")
    containers = {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}
    assert containers["extender"]["args"][:3] == [
        "extender",
        "--config=/etc/kubesalvo-extender/extender.yaml",
        "--listen=127.0.0.1:8888",
    ]
    assert not [
        o
        for o in rendered["extender"]
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "kubesalvo"
    ]


def test_the_extender_variants_extender_runs_with_its_configuration(
    control_plane, rendered, tmp_path
):
    """The ExtenderConfiguration the pod mounts is the one `kubesalvo extender --config`
    reads: the real command starts with it against the real API server, syncs its
    watches (/readyz) and stops cleanly on SIGTERM."""
    deployment = find(rendered["extender"], "Deployment", "kubesalvo-extender")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = [c for c in pod["containers"] if c["name"] == "extender"]
    (flag,) = [a for a in container["args"] if a.startswith("--config=")]
    mounted = Path(flag.removeprefix("--config="))
    mount = next(m for m in container["volumeMounts"] if mounted.is_relative_to(m["mountPath"]))
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    configmap = find(rendered["extender"], "ConfigMap", volume["configMap"]["name"])
    config = tmp_path / mounted.name
    config.write_text(configmap["data"][mounted.name])
    (port,) = processes.free_ports(1)
    log = tmp_path / "extender.log"
    with log.open("wb") as sink:
        extender = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubesalvo.sched.cli",
                "extender",
                f"--config={config}",
                f"--kubeconfig={control_plane.kubeconfig}",
                f"--listen=127.0.0.1:{port}",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert extender.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.2)
        extender.send_signal(signal.SIGTERM)
        assert extender.wait(60) == 0, log.read_text()
    finally:
        extender.kill()
        extender.wait()


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_mounted_configmap_and_service_account_is_in_the_render(rendered, variant):
    """A pod's ConfigMap volumes name objects of the same render and namespace (kustomize
    rewrites them to the generated, hash-suffixed names only then), and so do their
    service accounts: otherwise the pods could never start."""
    objects = rendered[variant]
    present = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}
    for workload in objects:
        if workload["kind"] not in ("Deployment", "DaemonSet"):
            continue
        namespace = workload["metadata"].get("namespace")
        assert namespace, workload["metadata"]["name"]
        pod = workload["spec"]["template"]["spec"]
        for volume in pod.get("volumes", []):
            if "configMap" in volume:
                wanted = ("ConfigMap", namespace, volume["configMap"]["name"])
                assert wanted in present, (workload["metadata"]["name"], wanted)
        wanted = ("ServiceAccount", namespace, pod["serviceAccountName"])
        assert wanted in present, (workload["metadata"]["name"], wanted)


def test_the_image_reporter_may_only_patch_nodes(rendered):
    role = find(rendered["image-reporter"], "ClusterRole", "kubesalvo:image-reporter")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"]}]
    daemonset = find(rendered["image-reporter"], "DaemonSet", "kubesalvo-image-reporter")
    pod = daemonset["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"] == ["image-reporter", "--node=$(NODE_NAME)", "--interval=30s"]
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    (volume,) = pod["volumes"]
    assert volume["hostPath"]["type"] == "Socket"
    socket = env["CONTAINER_RUNTIME_ENDPOINT"]["value"]
    assert socket == f"unix://{volume['hostPath']['path']}"
    assert pod["serviceAccountName"] == "kubesalvo-image-reporter"


def test_the_image_reporters_container_runs_the_command_as_built(rendered):
    """Its args are the command's own flags; the socket and the root stay read-only."""
    from kubesalvo.sched.cli import build_parser

    daemonset = find(rendered["image-reporter"], "DaemonSet", "kubesalvo-image-reporter")
    pod = daemonset["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = [a.replace("$(NODE_NAME)", "node-7") for a in container["args"]]
    parsed = build_parser(args[0]).parse_args(args)
    assert parsed.node == "node-7" and parsed.interval == 30.0
    assert parsed.crictl == "crictl"  # on the image's PATH: deploy/fetch_crictl.py
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    (mount,) = container["volumeMounts"]
    assert mount["readOnly"] is True
    assert mount["mountPath"] == pod["volumes"][0]["hostPath"]["path"]


def test_service_servicemonitor_and_scrape_config_agree_on_names_and_ports(rendered):
    objects = rendered["servicemonitor"]
    service = find(objects, "Service", "kubesalvo-metrics")
    deployment = find(objects, "Deployment", "kubesalvo")
    monitor = find(objects, "ServiceMonitor", "kubesalvo")
    (port,) = service["spec"]["ports"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert port["targetPort"] == container["ports"][0]["name"]
    assert "--secure-port=10259" in container["args"] and port["port"] == 10259
    selector = service["spec"]["selector"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= pod_labels.items()
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    endpoint = monitor["spec"]["endpoints"][0]
    assert (endpoint["port"], endpoint["scheme"], endpoint["path"]) == (
        port["name"],
        "https",
        "/metrics",
    )
    scrape = yaml.safe_load((DEPLOY / "prometheus" / "scrape-config.yaml").read_text())
    (job,) = scrape["scrape_configs"]
    assert job["scheme"] == "https" and job["metrics_path"] == "/metrics"
    keep = job["relabel_configs"][0]
    assert keep["action"] == "keep"
    assert re.fullmatch(keep["regex"], f"{service['metadata']['name']};{port['name']}")
    assert job["kubernetes_sd_configs"][0]["namespaces"]["names"] == [
        service["metadata"]["namespace"]
    ]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_kubesalvo_images_carry_the_package_version(rendered, variant):
    version = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text())["project"]["version"]
    for workload in workloads(rendered[variant]):
        for container in workload["spec"]["template"]["spec"]["containers"]:
            if container["name"] != "kube-scheduler":
                assert container["image"] == f"kubesalvo:{version}", (variant, container)
