"""metrics-server for a local control plane: its build, flags and API registration.

It serves ``metrics.k8s.io`` (the extender's ``safe`` agent, HorizontalPodAutoscalers)
through kube-apiserver's aggregation layer: an APIService names a Service of type
ExternalName for ``localhost`` and metrics-server's port, and metrics-server scrapes the
resource metrics kwok emulates for every node (``controlplane.kwok_metrics``).

Builds metrics-server into its own versioned cache.

The Go module in ``deploy/local/metrics-server`` pins ``sigs.k8s.io/metrics-server``; the
binary goes to ``<cache>/bin/metrics-server-<version>/metrics-server``, written
atomically (built in a temporary folder, then renamed), so the control plane's build and
cache folder are never touched and each version builds once per machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from kubesalvo.sched.cluster.build import (
    BuildError,
    Step,
    cache_root,
    explain_failure,
    find_go,
    install_folder,
    module_version,
    source_dir,
)

__all__ = ["MODULE", "api_objects", "args", "binary", "build", "module_dir", "version"]

MODULE = "sigs.k8s.io/metrics-server"
COMMAND = f"{MODULE}/cmd/metrics-server"


def module_dir() -> Path:
    return source_dir() / "metrics-server"


def version() -> str:
    return module_version((module_dir() / "go.mod").read_text(), MODULE)


def binary(root: Path | None = None) -> Path:
    """Where the binary of the pinned version lives (built or not)."""
    return (root or cache_root()) / "bin" / f"metrics-server-{version()}" / "metrics-server"


def build(force: bool = False) -> Path:
    """Builds metrics-server unless its cache folder holds it; returns the binary's path."""
    target = binary()
    if target.is_file() and not force:
        return target
    go = find_go()

    def fill(staging: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="kubesalvo-go-") as tmp:
            module = Path(tmp) / "metrics-server"
            shutil.copytree(module_dir(), module)
            step = Step(
                f"metrics-server {version()}",
                [go, "build", "-ldflags", "-s -w", "-o", str(staging / "metrics-server"), COMMAND],
                module,
                {"GOFLAGS": "-buildvcs=false"},
            )
            env = {**os.environ, **step.env}
            done = subprocess.run(
                step.argv, cwd=step.cwd, env=env, capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise BuildError(explain_failure(step, done.stdout + done.stderr))

    install_folder(target.parent, fill, lambda folder: (folder / target.name).is_file())
    return target


GROUP_VERSION = "v1beta1.metrics.k8s.io"
NAMESPACE = "kube-system"
NAME = "metrics-server"
# How often it scrapes every node (metrics-server's minimum is 10s).
RESOLUTION = "10s"


def args(
    binary_path: Path,
    kubeconfig: Path,
    port: int,
    cert_dir: Path,
    loopback: str,
    kubelet_port: int,
    node_selector: str = "",
) -> list[str]:
    """Its command line: serving on loopback with a self-signed certificate, trusting the
    front proxy through kube-system's extension-apiserver-authentication ConfigMap, and
    scraping each node (those ``node_selector`` selects, if given) at its InternalIP and
    ``kubelet_port``, kwok's server. The port is given, not read from each node's status:
    a node created already Ready (a bench fleet's) skips kwok's initialize stage, which is
    what writes the kubelet endpoint into the status."""
    selecting = [f"--node-selector={node_selector}"] if node_selector else []
    return [
        str(binary_path),
        *selecting,
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={loopback}",
        f"--secure-port={port}",
        f"--cert-dir={cert_dir}",
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-port={kubelet_port}",
        # kwok serves with the local CA's certificate for 127.0.0.1, not one per node.
        "--kubelet-insecure-tls",
        f"--metric-resolution={RESOLUTION}",
        # It must be shorter than the resolution (kwok answers on loopback at once).
        "--kubelet-request-timeout=5s",
    ]


def api_objects(port: int) -> list[dict[str, Any]]:
    """The Service (ExternalName ``localhost``, its port) and the APIService that route
    ``metrics.k8s.io`` to it."""
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {
            "type": "ExternalName",
            "externalName": "localhost",
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        },
    }
    api_service = {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": GROUP_VERSION},
        "spec": {
            "group": "metrics.k8s.io",
            "version": "v1beta1",
            "service": {"name": NAME, "namespace": NAMESPACE, "port": port},
            # Its certificate is self-signed (no CA of ours signs it).
            "insecureSkipTLSVerify": True,
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
        },
    }
    return [service, api_service]
