"""The configuration upstream kube-scheduler is started with as the baseline."""

from __future__ import annotations

from pathlib import Path

from kubesalvo.sched.cluster import baseline
from kubesalvo.sched.cluster.controlplane import ControlPlane


def test_config_raises_client_limits_and_speaks_protobuf(tmp_path: Path) -> None:
    config = baseline.scheduler_config(tmp_path / "kubeconfig")
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["clientConnection"] == {
        "kubeconfig": str(tmp_path / "kubeconfig"),
        "qps": 5000,
        "burst": 5000,
        "contentType": "application/vnd.kubernetes.protobuf",
    }
    assert config["leaderElection"] == {"leaderElect": False}


def test_config_takes_profiles_and_other_top_level_settings(tmp_path: Path) -> None:
    profiles = [{"schedulerName": "default-scheduler"}]
    config = baseline.scheduler_config(
        tmp_path / "kubeconfig",
        qps=100,
        burst=200,
        extra={"profiles": profiles, "percentageOfNodesToScore": 100},
    )
    assert config["profiles"] == profiles
    assert config["percentageOfNodesToScore"] == 100
    assert (config["clientConnection"]["qps"], config["clientConnection"]["burst"]) == (100, 200)


def test_scheduler_serves_on_loopback_with_the_given_config(tmp_path: Path) -> None:
    cp = ControlPlane(dir=tmp_path, bin_dir=tmp_path / "bin", ports={}, token="t")
    argv = baseline.kube_scheduler_args(cp, tmp_path / "c.yaml", 12345, tmp_path / "certs")
    assert argv[0] == str(tmp_path / "bin" / "kube-scheduler")
    assert f"--config={tmp_path / 'c.yaml'}" in argv
    assert "--bind-address=127.0.0.1" in argv
    assert "--secure-port=12345" in argv
