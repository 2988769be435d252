"""PodTopologySpread's default constraints in ``kubesalvo run``, on the real control plane.

A Deployment's pods carry no spread constraints of their own; kube-scheduler gives them
the profile's defaults over what their ReplicaSet selects. Three nodes of the test's
own pool: node "a" is empty, "b" and "c" hold a 3-cpu pod each, so resource scoring
alone puts every replica on "a" (the reference scheduler, without workloads, says so:
the setup cannot pass if ``run`` leaves the ReplicaSet out). With System defaulting
(hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway) the replicas go where the
reference scheduler, given the ReplicaSet, puts them; with a List default of hostname
maxSkew 1 DoNotSchedule they go two per node.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesalvo.core.reference import ReferenceScheduler
from tests.sched import test_app
from tests.sched.test_app import (
    CONFIG,
    SchedulerProcess,
    delete_nodes,
    delete_pods,
    list_objects,
    settled,
)

pytestmark = pytest.mark.integration

scheduler = test_app.scheduler

TAINT_KEY = "kubesalvo.io/test"
REPLICAS = 6
NODES = ("a", "b", "c")

LIST_DEFAULTS = """\
profiles:
- schedulerName: kubesalvo
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
"""


class Pool:
    """The test's three tainted nodes (one zone each) and the fillers on "b" and "c"."""

    def __init__(self, control_plane: Any, namespace: str) -> None:
        self.control_plane = control_plane
        self.namespace = namespace
        self.name = f"spread-{secrets.token_hex(3)}"
        self.nodes = [self._node(f"{self.name}-{n}", f"{self.name}-zone-{n}") for n in NODES]
        self.fillers = [
            self._pod(f"filler-{n}", {"app": "filler"}, "3", node=f"{self.name}-{n}")
            for n in NODES[1:]
        ]
        control_plane.create(self.nodes)
        control_plane.create(self.fillers)

    def _node(self, name: str, zone: str) -> dict[str, Any]:
        allocatable = {"cpu": "4", "memory": "16Gi", "pods": "110"}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "topology.kubernetes.io/zone": zone,
                    "kubesalvo.io/test-pool": self.name,
                },
                "annotations": {"kwok.x-k8s.io/node": "fake"},
            },
            "spec": {"taints": [{"key": TAINT_KEY, "value": self.name, "effect": "NoSchedule"}]},
            "status": {"allocatable": allocatable, "capacity": allocatable},
        }

    def template_spec(self, cpu: str) -> dict[str, Any]:
        return {
            "schedulerName": "kubesalvo",
            "nodeSelector": {"kubesalvo.io/test-pool": self.name},
            "tolerations": [
                {"key": TAINT_KEY, "operator": "Equal", "value": self.name, "effect": "NoSchedule"}
            ],
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}},
                }
            ],
        }

    def _pod(self, name: str, labels: dict[str, str], cpu: str, node: str) -> dict[str, Any]:
        spec = self.template_spec(cpu)
        spec["nodeName"] = node
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": labels},
            "spec": spec,
        }

    def deploy(self, name: str) -> None:
        self.control_plane.create(
            [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": name, "namespace": self.namespace},
                    "spec": {
                        "replicas": REPLICAS,
                        "selector": {"matchLabels": {"app": name}},
                        "template": {
                            "metadata": {"labels": {"app": name}},
                            "spec": self.template_spec("100m"),
                        },
                    },
                }
            ]
        )

    def replicas(self, name: str) -> list[dict[str, Any]]:
        pods = list_objects(self.control_plane, f"/api/v1/namespaces/{self.namespace}/pods")
        return [p for p in pods if p["metadata"].get("labels", {}).get("app") == name]

    def bound_per_node(self, name: str) -> Counter[str]:
        return Counter(
            p["spec"]["nodeName"][len(self.name) + 1 :]
            for p in self.replicas(name)
            if p["spec"].get("nodeName")
        )

    def reference(self, name: str, with_workloads: bool) -> Counter[str]:
        """Where kube-scheduler's rules put the replicas, one after the other."""
        path = f"/apis/apps/v1/namespaces/{self.namespace}/replicasets"
        workloads = [
            {"kind": "ReplicaSet", **rs}
            for rs in list_objects(self.control_plane, path)
            if rs["spec"]["selector"].get("matchLabels", {}).get("app") == name
        ]
        assert len(workloads) == 1
        pods = self.replicas(name)
        for pod in pods:
            pod["spec"].pop("nodeName", None)
        ref = ReferenceScheduler(
            self.nodes, self.fillers, workloads=workloads if with_workloads else ()
        )
        return Counter(str(r.node)[len(self.name) + 1 :] for r in ref.place_burst(pods))

    def delete(self) -> None:
        delete_pods(self.control_plane, self.fillers)
        delete_nodes(self.control_plane, self.nodes)


@pytest.fixture
def pool(control_plane, namespace) -> Iterator[Pool]:
    made = Pool(control_plane, namespace)
    try:
        yield made
    finally:
        made.delete()


def _spread(counts: Counter[str]) -> tuple[int, list[int]]:
    """The count on "a", and those on "b" and "c" in order (the two are alike)."""
    return counts["a"], sorted([counts["b"], counts["c"]])


def test_a_deployments_pods_spread_by_the_system_default_constraints(pool, scheduler):
    process = scheduler()
    pool.deploy("web")
    settled(process, 120, lambda: sum(pool.bound_per_node("web").values()) == REPLICAS)
    bound = pool.bound_per_node("web")
    # Without the ReplicaSet every replica would go to the empty node.
    assert pool.reference("web", with_workloads=False) == Counter({"a": REPLICAS})
    expected = pool.reference("web", with_workloads=True)
    assert _spread(bound) == _spread(expected)
    assert bound["b"] + bound["c"] > 0


def test_a_list_default_constraint_from_the_config_spreads_them_evenly(
    control_plane, pool, tmp_path: Path
):
    config = CONFIG.format(max_burst=1000) + LIST_DEFAULTS
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "list-defaults")
    try:
        process.wait_ready()
        pool.deploy("api")
        settled(process, 120, lambda: sum(pool.bound_per_node("api").values()) == REPLICAS)
        assert pool.bound_per_node("api") == Counter({n: REPLICAS // len(NODES) for n in NODES})
        assert pool.reference("api", with_workloads=False) == Counter({"a": REPLICAS})
    finally:
        process.kill()
