"""scheduler-plugins' PodGroup CRD on the real API server (deploy/crds/), for the tests."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

CRD = Path(__file__).resolve().parents[2] / "deploy/crds/podgroups.scheduling.x-k8s.io.yaml"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1"


def install_pod_group_crd(control_plane: Any, timeout: float = 60.0) -> None:
    """Create the CRD (kept if it exists) and wait until the API server serves PodGroups."""
    control_plane.create([yaml.safe_load(CRD.read_text())], exist_ok=True)

    async def served(client: Any) -> bool:
        try:
            await client.request("GET", f"{PODGROUPS}/podgroups")
        except Exception:
            return False
        return True

    deadline = time.monotonic() + timeout
    while not control_plane.call(served):
        assert time.monotonic() < deadline, "the PodGroup CRD was never served"
        time.sleep(0.5)


def pod_group(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def pod_group_status(control_plane: Any, namespace: str, name: str) -> dict[str, Any]:
    path = f"{PODGROUPS}/namespaces/{namespace}/podgroups/{name}"
    obj = control_plane.call(lambda client: client.request("GET", path))
    return dict(obj.get("status") or {})
