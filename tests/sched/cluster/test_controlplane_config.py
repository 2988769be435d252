"""The flags, kubeconfig and kwok configuration a control plane is started with, and
what ``stop`` removes."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from kubesalvo.sched.cluster import build, controlplane
from kubesalvo.sched.cluster.controlplane import ControlPlane


def plane(tmp_path: Path) -> ControlPlane:
    ports = {
        "etcd": 2379,
        "etcd-peer": 2380,
        "kube-apiserver": 6443,
        "kube-controller-manager": 10257,
    }
    return ControlPlane(dir=tmp_path, bin_dir=tmp_path / "bin", ports=ports, token="t0k")


def flags(argv: list[str]) -> dict[str, str]:
    """``--name=value`` arguments (after the binary) by name; bare ``--name`` maps to ""."""
    return {name: value for name, _, value in (arg[2:].partition("=") for arg in argv[1:])}


def test_apiserver_listens_on_loopback_with_rbac_and_token_auth(tmp_path: Path) -> None:
    args = flags(controlplane.apiserver_args(plane(tmp_path)))
    assert args["bind-address"] == "127.0.0.1"
    assert args["secure-port"] == "6443"
    assert args["etcd-servers"] == "http://127.0.0.1:2379"
    assert args["authorization-mode"] == "Node,RBAC"
    assert args["token-auth-file"] == str(tmp_path / "pki" / "tokens.csv")
    assert set(args["disable-admission-plugins"].split(",")) == {
        "ServiceAccount",
        "TaintNodesByCondition",
    }
    assert args["enable-priority-and-fairness"] == "false"
    assert args["service-account-key-file"] == args["service-account-signing-key-file"]


def test_controller_manager_runs_no_node_or_cloud_controllers(tmp_path: Path) -> None:
    args = flags(controlplane.controller_manager_args(plane(tmp_path)))
    controllers = set(args["controllers"].split(","))
    assert {"deployment-controller", "replicaset-controller", "job-controller"} <= controllers
    assert not {c for c in controllers if "node" in c or "cloud" in c}
    assert args["leader-elect"] == "false"
    assert args["bind-address"] == "127.0.0.1"


def test_kwok_gets_its_configuration_and_every_stage(tmp_path: Path) -> None:
    cp = plane(tmp_path)
    configs = flags(controlplane.kwok_args(cp))["config"].split(",")
    assert configs[:2] == [str(tmp_path / "kwok.yaml"), str(tmp_path / "kwok-metrics.yaml")]
    assert [Path(c).name for c in configs[2:]] == [f"{s}.yaml" for s in build.STAGE_FILES]
    options = controlplane.kwok_config(cp)["options"]
    assert options["manageAllNodes"] is True


def test_kwok_serves_every_nodes_kubelet_metrics_on_loopback(tmp_path: Path) -> None:
    cp = plane(tmp_path)
    cp.ports["kwok"] = 10250
    args = flags(controlplane.kwok_args(cp))
    assert args["server-address"] == "127.0.0.1:10250"
    assert args["node-port"] == "10250"  # each node's kubelet endpoint
    assert controlplane.kwok_config(cp)["options"]["nodeIP"] == "127.0.0.1"
    metric, usage = controlplane.kwok_metrics()
    assert metric["spec"]["path"] == "/metrics/nodes/{nodeName}/metrics/resource"
    names = {m["name"] for m in metric["spec"]["metrics"]}
    # What metrics-server's decoder reads from a kubelet's /metrics/resource.
    assert {
        "node_cpu_usage_seconds_total",
        "node_memory_working_set_bytes",
        "container_cpu_usage_seconds_total",
        "container_memory_working_set_bytes",
        "container_start_time_seconds",
    } <= names
    cpu = usage["spec"]["usages"][0]["usage"]["cpu"]["expression"]
    assert "kwok.x-k8s.io/usage-cpu" in cpu


def test_the_apiserver_proxies_to_extension_servers_with_the_front_proxy_certificate(
    tmp_path: Path,
) -> None:
    args = flags(controlplane.apiserver_args(plane(tmp_path)))
    assert args["requestheader-client-ca-file"] == str(tmp_path / "pki" / "front-proxy-ca.crt")
    assert args["requestheader-allowed-names"] == "front-proxy-client"
    assert args["proxy-client-cert-file"] == str(tmp_path / "pki" / "front-proxy-client.crt")
    assert args["requestheader-username-headers"] == "X-Remote-User"


def test_etcd_keeps_its_data_in_the_folder_on_loopback(tmp_path: Path) -> None:
    args = flags(controlplane.etcd_args(plane(tmp_path)))
    assert args["data-dir"] == str(tmp_path / "etcd")
    assert args["listen-client-urls"] == "http://127.0.0.1:2379"
    assert args["unsafe-no-fsync"] == ""


def test_kubeconfig_carries_server_token_and_ca() -> None:
    config = yaml.safe_load(controlplane.kubeconfig_text("https://127.0.0.1:6443", "t0k", b"PEM"))
    (cluster,) = config["clusters"]
    assert cluster["cluster"]["server"] == "https://127.0.0.1:6443"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]) == b"PEM"
    (user,) = config["users"]
    assert user["user"] == {"token": "t0k"}
    assert config["current-context"] == config["contexts"][0]["name"]


def test_state_round_trips(tmp_path: Path) -> None:
    cp = plane(tmp_path)
    cp.pids = {"etcd": 123}
    cp.save()
    assert ControlPlane.load(tmp_path) == cp


def test_stop_removes_only_its_own_files(tmp_path: Path) -> None:
    cp = plane(tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "etcd.log").write_text("x")
    (tmp_path / "kubeconfig").write_text("x")
    (tmp_path / "notes.txt").write_text("mine")
    cp.save()
    assert controlplane.stop(tmp_path) == cp
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_stop_of_an_empty_folder_removes_it(tmp_path: Path) -> None:
    folder = tmp_path / "cluster"
    folder.mkdir()
    assert controlplane.stop(folder) is None
    assert not folder.exists()
