"""VolumeBinding's capacity score (StorageCapacityScoring) with kube-scheduler and ``kubesalvo
run`` on one control plane, each scheduler with its own schedulerName, nodes, classes,
volumes and claims.

Each case has two nodes: ``a`` with 8 cpus, ``b`` with 4, so that without a capacity
score NodeResourcesFit and BalancedAllocation prefer ``a`` (a 1-cpu pod); the storage
prefers ``b`` under upstream's default shape:

* ``static``: a 4Gi WaitForFirstConsumer claim; ``a`` holds 5Gi and 100Gi local volumes
  (its smallest fitting one, 5Gi, is 80% used by the claim), ``b`` one of 40Gi (10%);
* ``provisioned``: a 10Gi claim of a CSI driver that asks for storage capacity,
  CSIStorageCapacity 20Gi on ``a``, 100Gi on ``b``;
* ``shape`` (v1.37 only): the static case under a profile whose shape prefers full
  volumes (utilization 0 -> 0, 100 -> 10), with ``a`` and ``b``'s cpus swapped: ``a``.

On v1.37.2 (the gate beta, on by default; kubesalvo with ``--feature-gates
StorageCapacityScoring=true``) both pick ``b`` for the first two cases and ``a`` for
``shape``; on v1.34.4 (the gate off in both) both ignore capacity and pick ``a``.
Compared: the node of the static pod and the volume its claim is bound to, and the
selected node of the provisioned claim.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import pytest

from kubesalvo.sched.cluster import start_kube_scheduler
from kubesalvo.sched.cluster.controlplane import ControlPlane
from tests.helpers.volumes import HOSTNAME
from tests.sched.test_app import CONFIG, SchedulerProcess, delete_pods, list_objects
from tests.sched.test_run_volumes_delayed_upstream import SELECTED_NODE, _claim, _class, _volume
from tests.sched.test_run_volumes_upstream import POOL, _node

pytestmark = pytest.mark.integration

CUSTOM_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
SHAPE_YAML = "[{utilization: 0, score: 0}, {utilization: 100, score: 10}]"


def _pod(namespace: str, name: str, scheduler: str, pool: str, claim: str) -> dict[str, Any]:
    requests = {"cpu": "1", "memory": "1Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {POOL: pool},
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": requests, "limits": requests},
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }


class _Scenario:
    """The objects of every case for each scheduler (``who``: ours, theirs)."""

    def __init__(self, namespace: str, schedulers: dict[str, dict[str, str]]) -> None:
        self.namespace = namespace
        self.tag = secrets.token_hex(3)
        self.driver = f"capacity-{self.tag}.example.com"
        self.objects: dict[str, list[dict[str, Any]]] = {
            k: [] for k in ("nodes", "classes", "drivers", "volumes", "claims", "capacities")
        }
        self.pods: list[dict[str, Any]] = []
        self.objects["drivers"].append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIDriver",
                "metadata": {"name": self.driver},
                "spec": {"storageCapacity": True, "attachRequired": False},
            }
        )
        for who, cases in schedulers.items():
            for case, scheduler in cases.items():
                self._case(who, case, scheduler)

    def node(self, who: str, case: str, role: str) -> str:
        return f"cap-{self.tag}-{case}-{who}-{role}"

    def _case(self, who: str, case: str, scheduler: str) -> None:
        pool = f"{self.tag}-{case}-{who}"
        a, b = self.node(who, case, "a"), self.node(who, case, "b")
        cpus = ("4", "8") if case == "shape" else ("8", "4")
        self.objects["nodes"] += [_node(a, pool, "za", cpus[0]), _node(b, pool, "za", cpus[1])]
        name = f"{case}-{who}"
        cls = f"cap-{self.tag}-{case}-{who}"
        if case == "provisioned":
            self.objects["classes"].append(_class(cls, self.driver))
            for node, size in ((a, "20Gi"), (b, "100Gi")):
                self.objects["capacities"].append(
                    {
                        "apiVersion": "storage.k8s.io/v1",
                        "kind": "CSIStorageCapacity",
                        "metadata": {"name": f"{node}-pool", "namespace": self.namespace},
                        "storageClassName": cls,
                        "nodeTopology": {"matchLabels": {HOSTNAME: node}},
                        "capacity": size,
                    }
                )
            self.objects["claims"].append(_claim(self.namespace, name, cls, "10Gi"))
        else:
            self.objects["classes"].append(_class(cls, "kubernetes.io/no-provisioner"))
            for node, volume, size in ((a, "a5", "5Gi"), (a, "a100", "100Gi"), (b, "b40", "40Gi")):
                self.objects["volumes"].append(_volume(f"{cls}-{volume}", cls, node, size))
            self.objects["claims"].append(_claim(self.namespace, name, cls, "4Gi"))
        self.pods.append(_pod(self.namespace, name, scheduler, pool, name))

    def create(self, plane: ControlPlane) -> None:
        for kind in ("nodes", "classes", "drivers", "volumes", "capacities", "claims"):
            plane.create(self.objects[kind])
        deadline = time.monotonic() + 60
        names = {v["metadata"]["name"] for v in self.objects["volumes"]}
        while True:
            found = list_objects(plane, "/api/v1/persistentvolumes")
            ours = [v for v in found if v["metadata"]["name"] in names]
            if len(ours) == len(names) and all(
                (v.get("status") or {}).get("phase") == "Available" for v in ours
            ):
                break
            assert time.monotonic() < deadline, "volumes never became Available"
            time.sleep(0.5)

    def delete(self, plane: ControlPlane) -> None:
        delete_pods(plane, self.pods)
        plane.delete(
            [
                *self.objects["claims"],
                *self.objects["capacities"],
                *self.objects["classes"],
                *self.objects["drivers"],
                *self.objects["nodes"],
                *self.objects["volumes"],
            ]
        )

    def outcomes(self, plane: ControlPlane, cases: list[str]) -> dict[str, str]:
        """Per pod (``case-who``) the role of the node chosen (a or b), with the volume of a
        static claim: waits until every case has one."""
        ns = self.namespace
        wanted = [f"{case}-{who}" for case in cases for who in ("ours", "theirs")]
        deadline = time.monotonic() + 120
        while True:
            seen: dict[str, str] = {}
            for pod in list_objects(plane, f"/api/v1/namespaces/{ns}/pods"):
                node = (pod.get("spec") or {}).get("nodeName")
                if node:
                    seen[pod["metadata"]["name"]] = "on " + node.rsplit("-", 1)[1]
            for claim in list_objects(plane, f"/api/v1/namespaces/{ns}/persistentvolumeclaims"):
                name = claim["metadata"]["name"]
                selected = (claim["metadata"].get("annotations") or {}).get(SELECTED_NODE)
                if name.startswith("provisioned") and selected:
                    seen[name] = "selected " + selected.rsplit("-", 1)[1]
                elif name in seen and claim["spec"].get("volumeName"):
                    seen[name] += " volume " + claim["spec"]["volumeName"].rsplit("-", 1)[1]
            if all(n in seen and ("volume" in seen[n] or "selected" in seen[n]) for n in wanted):
                return seen
            assert time.monotonic() < deadline, f"outcomes so far: {seen}"
            time.sleep(1.0)


def _kubesalvo_config(profiles: dict[str, str | None]) -> str:
    """CONFIG with a profile per scheduler name, the shape given when not None."""
    text = CONFIG.format(max_burst=100) + "profiles:\n"
    for name, shape in profiles.items():
        text += f"- schedulerName: {name}\n"
        if shape is not None:
            text += f"  pluginConfig:\n  - name: VolumeBinding\n    args: {{shape: {shape}}}\n"
    return text


def _run(plane: ControlPlane, namespace: str, tmp_path: Any, cases: list[str], gate: bool) -> dict:
    tag = secrets.token_hex(2)
    names = {who: {case: f"cap-{tag}-{who}-{case}" for case in cases} for who in ("ours", "theirs")}
    scenario = _Scenario(namespace, names)
    scenario.create(plane)
    profiles = [{"schedulerName": names["theirs"][case]} for case in cases if case != "shape"]
    if "shape" in cases:
        profiles.append(
            {
                "schedulerName": names["theirs"]["shape"],
                "pluginConfig": [{"name": "VolumeBinding", "args": {"shape": CUSTOM_SHAPE}}],
            }
        )
    upstream = start_kube_scheduler(plane, extra={"profiles": profiles}, name=f"capacity-{tag}")
    config = _kubesalvo_config(
        {names["ours"][c]: SHAPE_YAML if c == "shape" else None for c in cases}
    )
    args = ("--feature-gates", "StorageCapacityScoring=true") if gate else ()
    process = SchedulerProcess(tmp_path, plane.kubeconfig, config, f"capacity-{tag}", args)
    try:
        process.wait_ready()
        plane.create(scenario.pods)
        seen = scenario.outcomes(plane, cases)
        print(json.dumps(seen, indent=1))
        return seen
    finally:
        process.kill()
        upstream.stop()
        scenario.delete(plane)


@pytest.fixture
def newest_namespace(newest_control_plane: ControlPlane) -> str:
    name = f"capacity-{secrets.token_hex(3)}"
    newest_control_plane.create(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}]
    )
    return name


def test_with_the_gate_on_both_prefer_the_emptiest_storage_on_v1_37(
    newest_control_plane, newest_namespace, tmp_path
):
    assert newest_control_plane.kubernetes == "v1.37.2"
    cases = ["static", "provisioned", "shape"]
    seen = _run(newest_control_plane, newest_namespace, tmp_path, cases, gate=True)
    for case in cases:
        assert seen[f"{case}-ours"] == seen[f"{case}-theirs"], case
    assert seen["static-ours"] == "on b volume b40"
    assert seen["provisioned-ours"] == "selected b"
    assert seen["shape-ours"] == "on a volume a5"


def test_with_the_gate_off_both_ignore_capacity_on_v1_34(control_plane, namespace, tmp_path):
    # The suite's release: v1.34.4 by default, where the gate is off in both. Run with
    # ``--kubernetes v1.37.2``, kube-scheduler has it on, and kubesalvo gets it too.
    gate = control_plane.kubernetes != "v1.34.4"
    cases = ["static", "provisioned"]
    seen = _run(control_plane, namespace, tmp_path, cases, gate=gate)
    for case in cases:
        assert seen[f"{case}-ours"] == seen[f"{case}-theirs"], case
    role = "b" if gate else "a"
    assert seen["static-ours"] == f"on {role} volume {role}{'40' if gate else '5'}"
    assert seen["provisioned-ours"] == f"selected {role}"
