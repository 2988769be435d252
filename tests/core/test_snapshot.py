"""Snapshot format: round trips, validation with field paths, and stripping API objects."""

from __future__ import annotations

import msgpack
import pytest

from kubesalvo.core import snapshot
from kubesalvo.core.snapshot import Snapshot, SnapshotError, dumps, loads
from kubesalvo.core.synthetic import (
    make_nodes,
    make_pods,
    namespace_objects,
    priority_class_objects,
)


def synthetic_snapshot() -> Snapshot:
    pods = make_pods(300, seed=1, shape="mixed")
    pods[0]["spec"]["nodeName"] = "general-00000"
    return Snapshot(
        nodes=make_nodes(40, seed=1),
        pods=pods,
        namespaces=namespace_objects(),
        priorityclasses=priority_class_objects(),
        created="2026-01-02T03:04:05Z",
        source="synthetic test",
    )


def test_round_trip_keeps_every_object():
    original = synthetic_snapshot()
    restored = loads(dumps(original))
    assert restored == original
    assert len(restored.bound_pods()) == 1
    assert len(restored.pending_pods()) == 299


def test_dumps_stamps_the_creation_time_when_missing():
    restored = loads(dumps(Snapshot(nodes=[], pods=[])))
    assert restored.created.endswith("Z") and restored.created[:2] == "20"


def test_header_names_the_format_and_version():
    document = msgpack.unpackb(dumps(Snapshot(nodes=[], pods=[])))
    assert document["format"] == "kubesalvo-snapshot"
    assert document["version"] == 1


def pack(document: dict) -> bytes:
    return msgpack.packb(document, use_bin_type=True)


HEADER = {"format": "kubesalvo-snapshot", "version": 1}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "msgpack could not decode it"),
        (b"\xc1garbage", "msgpack could not decode it"),
        (b'{"format": "kubesalvo-snapshot"}', "msgpack could not decode it"),
        (dumps(Snapshot(nodes=[], pods=[]))[:-3], "msgpack could not decode it"),
        (pack([1, 2, 3]), "no format: 'kubesalvo-snapshot' field"),
        (pack({"format": "other"}), "no format: 'kubesalvo-snapshot' field"),
        (pack({**HEADER, "version": 2}), "version: snapshot version 2 is newer than"),
        (pack({**HEADER, "version": "1"}), "version: expected an integer"),
        (pack({**HEADER, "version": 0}), "version: expected 1 to 1"),
        (pack({**HEADER, "nodes": {}}), "nodes: expected a list"),
        (pack({**HEADER, "pods": [[]]}), r"pods\[0\]: expected a map"),
        (pack({**HEADER, "nodes": [{"metadata": {"name": "a"}}, {}]}), r"nodes\[1\].metadata"),
        (pack({**HEADER, "pods": [{"metadata": {"name": "p"}}]}), r"pods\[0\].metadata.namespace"),
        (
            pack({**HEADER, "namespaces": [{"metadata": {"name": 3}}]}),
            r"namespaces\[0\].metadata.name",
        ),
        (pack({**HEADER, "services": []}), "services: unknown field"),
        (pack({**HEADER, "created": 5}), "created: expected a string"),
    ],
)
def test_corrupt_or_foreign_bytes_are_refused_with_the_field_path(data, message):
    with pytest.raises(SnapshotError, match=message):
        loads(data)


FULL_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-1",
        "namespace": "team-a",
        "uid": "u1",
        "labels": {"app": "web"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
        "managedFields": [{"manager": "kubectl"}],
        "resourceVersion": "42",
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "rs1",
             "controller": True, "blockOwnerDeletion": True}
        ],
    },
    "spec": {
        "nodeName": "n1",
        "schedulerName": "default-scheduler",
        "priority": 10,
        "tolerations": [{"key": "spot", "operator": "Exists"}],
        "volumes": [{"name": "data", "emptyDir": {}}],
        "serviceAccountName": "default",
        "containers": [
            {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1"}},
             "ports": [{"containerPort": 80, "hostPort": 8080}],
             "env": [{"name": "A", "value": "b"}], "volumeMounts": [{"name": "data"}]}
        ],
        "initContainers": [
            {"name": "sidecar", "image": "envoy", "restartPolicy": "Always",
             "resources": {"requests": {"memory": "64Mi"}}, "command": ["envoy"]}
        ],
    },
    "status": {"phase": "Running", "podIP": "10.0.0.1", "containerStatuses": [{}]},
}  # fmt: skip


def test_strip_pod_keeps_what_scheduling_reads_and_drops_the_rest():
    stripped = snapshot.strip(FULL_POD)
    assert stripped["metadata"] == {
        "name": "web-1",
        "namespace": "team-a",
        "uid": "u1",
        "labels": {"app": "web"},
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "rs1",
             "controller": True}
        ],
    }  # fmt: skip
    assert set(stripped["spec"]) == {
        "nodeName", "schedulerName", "priority", "tolerations", "containers", "initContainers",
    }  # fmt: skip
    assert stripped["spec"]["containers"] == [
        {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1"}},
         "ports": [{"containerPort": 80, "hostPort": 8080}]}
    ]  # fmt: skip
    # A restartable init container is a sidecar: its restartPolicy changes the pod's requests.
    assert stripped["spec"]["initContainers"][0]["restartPolicy"] == "Always"
    assert stripped["status"] == {"phase": "Running"}


def test_strip_node_keeps_capacity_taints_images_and_readiness():
    node = make_nodes(1)[0]
    node["metadata"]["managedFields"] = [{}]
    node["spec"] = {"taints": [{"key": "a", "effect": "NoSchedule"}], "podCIDR": "10.0.0.0/24"}
    node["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "lastHeartbeatTime": "t", "message": "ok"},
        {"type": "MemoryPressure", "status": "False"},
    ]
    stripped = snapshot.strip(node)
    assert stripped["spec"] == {"taints": [{"key": "a", "effect": "NoSchedule"}]}
    assert stripped["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert stripped["status"]["allocatable"] == node["status"]["allocatable"]
    assert stripped["status"]["images"] == node["status"]["images"]
    assert stripped["metadata"]["labels"] == node["metadata"]["labels"]
    assert "nodeInfo" not in stripped["status"]


def test_strip_refuses_kinds_a_snapshot_does_not_hold():
    with pytest.raises(ValueError, match="not 'Service'"):
        snapshot.strip({"kind": "Service"})


def test_from_objects_leaves_out_finished_pods_and_strips_the_rest():
    done = {**FULL_POD, "status": {"phase": "Succeeded"}}
    snap = snapshot.from_objects(make_nodes(2), [FULL_POD, done], namespace_objects(["team-a"]))
    assert [p["metadata"]["name"] for p in snap.pods] == ["web-1"]
    assert "volumes" not in snap.pods[0]["spec"]
    assert snap.namespaces[0]["metadata"]["labels"]["tier"] == "frontend"
    assert loads(dumps(snap)).pods == snap.pods


def test_synthetic_objects_survive_stripping_unchanged_where_it_matters():
    for pod in make_pods(200, seed=2, shape="mixed"):
        stripped = snapshot.strip_pod(pod)
        for key in ("containers", "affinity", "tolerations", "topologySpreadConstraints"):
            assert stripped["spec"].get(key) == pod["spec"].get(key)
    for pc in priority_class_objects():
        assert snapshot.strip(pc)["value"] == pc["value"]
