"""``kubesalvo simulate --snapshot``: the snapshot's workloads give pods without spread
constraints of their own PodTopologySpread's default constraints, as kube-scheduler does.

Three 4-cpu nodes, one zone each: "a" is empty, "b" and "c" each run a 3-cpu pod, so
resource scoring alone puts every replica on "a" (the reference scheduler without
workloads says so, which is what makes these tests fail when simulate leaves the
workloads out). With the System defaults (hostname maxSkew 3, zone maxSkew 5,
ScheduleAnyway) over what the pods' ReplicaSet, StatefulSet, ReplicationController or
Service selects, some go to "b" and "c": every placement must be one of the reference
scheduler's best nodes given the same workloads, and with a List default of hostname
maxSkew 1 DoNotSchedule they go two per node.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.snapshot import Snapshot
from kubesalvo.sched import cli
from kubesalvo.sched.simulate.run import burst_workloads
from kubesalvo.sched.snapshot import files as snapshot_files

REPLICAS = 6
NAMESPACE = "shop"

# The workload selecting the replicas (labels app=web), and the owner reference the
# replicas carry (None: a Service selects pods without owning them).
WORKLOADS: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    "ReplicaSet": (
        {"apiVersion": "apps/v1", "kind": "ReplicaSet",
         "metadata": {"name": "web-5d8f", "namespace": NAMESPACE, "uid": "rs-1"},
         "spec": {"selector": {"matchLabels": {"app": "web"}}}},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f", "uid": "rs-1",
         "controller": True},
    ),
    "StatefulSet": (
        {"apiVersion": "apps/v1", "kind": "StatefulSet",
         "metadata": {"name": "web", "namespace": NAMESPACE, "uid": "ss-1"},
         "spec": {"selector": {"matchExpressions": [
             {"key": "app", "operator": "In", "values": ["web"]}]}}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "ss-1",
         "controller": True},
    ),
    "ReplicationController": (
        {"apiVersion": "v1", "kind": "ReplicationController",
         "metadata": {"name": "web", "namespace": NAMESPACE, "uid": "rc-1"},
         "spec": {"selector": {"app": "web"}}},
        {"apiVersion": "v1", "kind": "ReplicationController", "name": "web", "uid": "rc-1",
         "controller": True},
    ),
    "Service": (
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "web", "namespace": NAMESPACE, "uid": "svc-1"},
         "spec": {"selector": {"app": "web"}}},
        None,
    ),
}  # fmt: skip

LIST_DEFAULTS = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
"""


def node(name: str) -> dict[str, Any]:
    allocatable = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": f"zone-{name}",
            },
        },
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def pod(name: str, cpu: str, labels: dict[str, str], owner: dict[str, Any] | None = None,
        node_name: str | None = None) -> dict[str, Any]:  # fmt: skip
    metadata: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": labels}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}]
    }
    if node_name is not None:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def cluster(kind: str) -> Snapshot:
    workload, owner = WORKLOADS[kind]
    fillers = [pod(f"filler-{n}", "3", {"app": "filler"}, node_name=n) for n in ("b", "c")]
    replicas = [pod(f"web-{i}", "100m", {"app": "web"}, owner) for i in range(REPLICAS)]
    # Another namespace's workload selecting the same labels must not count.
    elsewhere = {**WORKLOADS["Service"][0], "metadata": {"name": "web", "namespace": "other"}}
    return Snapshot(
        nodes=[node(n) for n in ("a", "b", "c")],
        pods=fillers + replicas,
        workloads=[workload, elsewhere],
        source="default spreading test",
    )


def simulate_placed(snapshot: Snapshot, tmp_path: Path, capsys, *argv: str) -> dict[str, str]:
    """Run ``kubesalvo simulate --snapshot`` on the command line: each replica's node."""
    before, after = tmp_path / "before.msgpack", tmp_path / "after.msgpack"
    snapshot_files.save(before, snapshot)
    code = cli.main(
        ["simulate", "--snapshot", str(before), "--save-placed", str(after), "--json", *argv]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["placed"] == summary["pods"] == REPLICAS
    assert summary["workloads"] == 1  # the other namespace's Service is not handed over
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in snapshot_files.load(after).pods
        if p["metadata"]["name"].startswith("web-")
    }


def reference(snapshot: Snapshot, workloads: list[dict[str, Any]], placed=None) -> Counter[str]:
    """Where kube-scheduler's rules put the replicas one after the other; with ``placed``
    (the simulated nodes), each simulated choice must be one of the best nodes."""
    ref = ReferenceScheduler(snapshot.nodes, snapshot.bound_pods(), workloads=workloads)
    pending = snapshot.pending_pods()
    if placed is None:
        return Counter(str(r.node) for r in ref.place_burst(pending))
    chosen = iter([placed[p["metadata"]["name"]] for p in pending])

    def follow(result: Any) -> str:
        name = next(chosen)
        assert name in result.best_nodes, (result.pod, name, result.best_nodes)
        return name

    return Counter(str(r.node) for r in ref.place_burst(pending, choose=follow))


@pytest.mark.parametrize("kind", list(WORKLOADS))
def test_replicas_spread_by_the_system_defaults_over_their_workloads_selector(
    kind, tmp_path, capsys
):
    snapshot = cluster(kind)
    # Without the workloads, resource scoring alone piles every replica onto "a".
    assert reference(snapshot, []) == Counter({"a": REPLICAS})
    placed = simulate_placed(snapshot, tmp_path, capsys)
    on_nodes = Counter(placed.values())
    assert on_nodes["b"] + on_nodes["c"] > 0
    assert on_nodes == reference(snapshot, snapshot.workloads, placed)


def test_a_list_default_from_the_config_spreads_the_replicas_evenly(tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(LIST_DEFAULTS)
    placed = simulate_placed(cluster("ReplicaSet"), tmp_path, capsys, "--config", str(config))
    assert Counter(placed.values()) == Counter({"a": 2, "b": 2, "c": 2})


def test_pods_whose_controller_is_not_in_the_snapshot_get_no_default_constraints(tmp_path, capsys):
    snapshot = cluster("ReplicaSet")
    # The pods' owner is a ReplicaSet of another name: no workload selects them.
    snapshot.workloads[0] = {
        **snapshot.workloads[0],
        "metadata": {"name": "api-77c4", "namespace": NAMESPACE, "uid": "rs-2"},
    }
    placed = simulate_placed(snapshot, tmp_path, capsys)
    assert Counter(placed.values()) == Counter({"a": REPLICAS})


def test_burst_workloads_are_those_of_the_bursts_namespaces():
    snapshot = cluster("ReplicaSet")
    burst = snapshot.pending_pods()
    assert burst_workloads(snapshot, burst) == [WORKLOADS["ReplicaSet"][0]]
    assert burst_workloads(snapshot, []) == []
    assert burst_workloads(Snapshot(nodes=[], pods=burst), burst) == []


def test_a_snapshot_missing_workload_kinds_is_replayed_with_a_warning(tmp_path, capsys):
    snapshot = cluster("ReplicaSet")
    snapshot.omitted = ["services"]
    path = tmp_path / "partial.msgpack"
    snapshot_files.save(path, snapshot)
    code = cli.main(["simulate", "--snapshot", str(path), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "warning: the snapshot lacks services" in captured.err
    summary = json.loads(captured.out)
    assert summary["omitted_workloads"] == ["services"]
    assert summary["placed"] == REPLICAS


def test_generated_replicasets_are_owned_and_spread_as_the_reference_spreads_them(tmp_path, capsys):
    """``--workload replicasets`` makes its ReplicaSets the pods' owners by default: the
    summary counts them, every pod names its own, and every choice is one of the
    reference's best nodes given those workloads (System default spreading applies)."""
    before, after = tmp_path / "before.msgpack", tmp_path / "after.msgpack"
    argv = ["simulate", "--workload", "replicasets", "--nodes", "12", "--pods", "60"]
    code = cli.main([*argv, "--classes", "3", "--json", "--save-snapshot", str(before),
                     "--save-placed", str(after)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["workloads"] == 3 and summary["placed"] == 60
    assert "owned by ReplicaSets" in summary["source"]
    snapshot = snapshot_files.load(before)
    owners = {(w["kind"], w["metadata"]["name"]) for w in snapshot.workloads}
    for p in snapshot.pending_pods():
        (reference_,) = p["metadata"]["ownerReferences"]
        assert reference_["controller"] is True
        assert (reference_["kind"], reference_["name"]) in owners
    placed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in snapshot_files.load(after).pods}
    reference(snapshot, snapshot.workloads, placed)


def test_generated_replicasets_without_owners_have_none(capsys):
    argv = ["simulate", "--workload", "replicasets", "--nodes", "12", "--pods", "60", "--json"]
    assert cli.main([*argv, "--no-owners"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["workloads"] == 0 and "owned" not in summary["source"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--workload", "mixed", "--owners"],
        ["--no-owners"],
    ],
)
def test_owners_applies_to_the_replicasets_workload_only(argv, capsys):
    assert cli.main(["simulate", *argv]) == 2
    assert "--owners applies to --workload replicasets only" in capsys.readouterr().err
