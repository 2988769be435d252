"""Snapshot format: round trips, reading version 1 files, validation with field paths, and
stripping API objects."""

from __future__ import annotations

import msgpack
import pytest

from kubesalvo.core import snapshot
from kubesalvo.core.snapshot import Snapshot, SnapshotError, dumps, from_objects, loads
from kubesalvo.core.synthetic import (
    make_nodes,
    make_pods,
    namespace_objects,
    priority_class_objects,
)

WORKLOADS = [
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "team-a",
     "uid": "s1"}, "spec": {"selector": {"app": "web"}}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "external",
     "namespace": "team-a", "uid": "s2"}, "spec": {}},
    {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "old",
     "namespace": "team-a", "uid": "r1"}, "spec": {"selector": {"app": "old"}}},
    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-abc",
     "namespace": "team-a", "uid": "rs1"}, "spec": {"selector": {
         "matchLabels": {"app": "web"},
         "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}}},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db",
     "namespace": "team-b", "uid": "ss1"}, "spec": {"selector": {}}},
]  # fmt: skip


def synthetic_snapshot() -> Snapshot:
    pods = make_pods(300, seed=1, shape="mixed")
    pods[0]["spec"]["nodeName"] = "general-00000"
    return Snapshot(
        nodes=make_nodes(40, seed=1),
        pods=pods,
        namespaces=namespace_objects(),
        priorityclasses=priority_class_objects(),
        workloads=WORKLOADS,
        omitted=["statefulsets"],
        created="2026-01-02T03:04:05Z",
        source="synthetic test",
    )


def test_round_trip_keeps_every_object():
    original = synthetic_snapshot()
    restored = loads(dumps(original))
    assert restored == original
    assert len(restored.bound_pods()) == 1
    assert len(restored.pending_pods()) == 299
    assert restored.workloads == WORKLOADS
    assert restored.omitted == ["statefulsets"]


def test_a_version_1_snapshot_reads_as_a_cluster_without_workloads():
    # The layout version 1 wrote: no workloads and no omitted sections.
    original = synthetic_snapshot()
    document = {
        "format": "kubesalvo-snapshot",
        "version": 1,
        "created": original.created,
        "source": original.source,
        "nodes": original.nodes,
        "pods": original.pods,
        "namespaces": original.namespaces,
        "priorityclasses": original.priorityclasses,
    }
    restored = loads(msgpack.packb(document, use_bin_type=True))
    assert restored.workloads == [] and restored.omitted == []
    assert restored.nodes == original.nodes and restored.pods == original.pods
    assert restored.priorityclasses == original.priorityclasses


def test_dumps_stamps_the_creation_time_when_missing():
    restored = loads(dumps(Snapshot(nodes=[], pods=[])))
    assert restored.created.endswith("Z") and restored.created[:2] == "20"


def test_header_names_the_format_and_version():
    document = msgpack.unpackb(dumps(Snapshot(nodes=[], pods=[])))
    assert document["format"] == "kubesalvo-snapshot"
    assert document["version"] == 4
    assert document["workloads"] == [] and document["omitted"] == []
    assert document["storage"] == {} and document["devices"] == {}


def pack(document: dict) -> bytes:
    return msgpack.packb(document, use_bin_type=True)


HEADER = {"format": "kubesalvo-snapshot", "version": 4}
V3 = {"format": "kubesalvo-snapshot", "version": 3}
V2 = {"format": "kubesalvo-snapshot", "version": 2}
V1 = {"format": "kubesalvo-snapshot", "version": 1}


def workload(kind: str = "ReplicaSet", **changes) -> dict:
    """A valid workload of ``kind`` with top-level fields replaced by ``changes``."""
    found = next(w for w in WORKLOADS if w["kind"] == kind)
    return {**found, **changes}


def selector(value) -> dict:
    return workload(spec={"selector": value})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "msgpack could not decode it"),
        (b"\xc1garbage", "msgpack could not decode it"),
        (b'{"format": "kubesalvo-snapshot"}', "msgpack could not decode it"),
        (dumps(Snapshot(nodes=[], pods=[]))[:-3], "msgpack could not decode it"),
        (pack([1, 2, 3]), "no format: 'kubesalvo-snapshot' field"),
        (pack({"format": "other"}), "no format: 'kubesalvo-snapshot' field"),
        (pack({**HEADER, "version": 5}), "version: snapshot version 5 is newer than"),
        (pack({**HEADER, "version": "1"}), "version: expected an integer"),
        (pack({**HEADER, "version": 0}), "version: expected 1 to 4"),
        (pack({**HEADER, "nodes": {}}), "nodes: expected a list"),
        (pack({**HEADER, "pods": [[]]}), r"pods\[0\]: expected a map"),
        (pack({**HEADER, "nodes": [{"metadata": {"name": "a"}}, {}]}), r"nodes\[1\].metadata"),
        (pack({**HEADER, "pods": [{"metadata": {"name": "p"}}]}), r"pods\[0\].metadata.namespace"),
        (
            pack({**HEADER, "namespaces": [{"metadata": {"name": 3}}]}),
            r"namespaces\[0\].metadata.name",
        ),
        (pack({**HEADER, "services": []}), "services: unknown field in a version 4 snapshot"),
        (pack({**V3, "devices": {}}), "devices: unknown field in a version 3 snapshot"),
        (pack({**HEADER, "devices": []}), "devices: expected a map"),
        (
            pack({**HEADER, "devices": {"devicetaintrules": []}}),
            "devices.devicetaintrules: unknown kind",
        ),
        (
            pack({**HEADER, "devices": {"resourceclaims": [{"metadata": {"name": "c"}}]}}),
            r"devices.resourceclaims\[0\].metadata.namespace",
        ),
        (
            pack(
                {**HEADER, "devices": {"resourceslices": [{"metadata": {"name": "s"}, "spec": []}]}}
            ),
            r"devices.resourceslices\[0\].spec: expected a map",
        ),
        (pack({**V2, "storage": {}}), "storage: unknown field in a version 2 snapshot"),
        (pack({**HEADER, "storage": []}), "storage: expected a map"),
        (pack({**HEADER, "storage": {"secrets": []}}), "storage.secrets: unknown kind"),
        (
            pack({**HEADER, "storage": {"persistentvolumeclaims": [{"metadata": {"name": "c"}}]}}),
            r"storage.persistentvolumeclaims\[0\].metadata.namespace",
        ),
        (pack({**HEADER, "created": 5}), "created: expected a string"),
        # Sections version 1 did not have are refused in a file that says it is version 1.
        (pack({**V1, "workloads": []}), "workloads: unknown field in a version 1 snapshot"),
        (pack({**V1, "omitted": []}), "omitted: unknown field in a version 1 snapshot"),
    ],
)
def test_corrupt_or_foreign_bytes_are_refused_with_the_field_path(data, message):
    with pytest.raises(SnapshotError, match=message):
        loads(data)


@pytest.mark.parametrize(
    ("workloads", "message"),
    [
        ({"web": {}}, "workloads: expected a list, got dict"),
        (["web"], r"workloads\[0\]: expected a map, got str"),
        ([workload(metadata={"name": "web"})], r"workloads\[0\].metadata.namespace: missing"),
        ([workload(metadata={"namespace": "a"})], r"workloads\[0\].metadata.name: missing"),
        (
            [workload(), {**workload(), "kind": "Deployment"}],
            r"workloads\[1\].kind: expected one of Service, ReplicationController, ReplicaSet, "
            r"StatefulSet, got 'Deployment'",
        ),
        ([workload(apiVersion="v1")], r"workloads\[0\].apiVersion: a ReplicaSet is 'apps/v1'"),
        (
            [workload(metadata={"name": "a", "namespace": "b", "uid": 7})],
            r"workloads\[0\].metadata.uid: expected a string",
        ),
        ([workload(spec=[])], r"workloads\[0\].spec: expected a map, got list"),
        (
            [workload("Service", spec={"selector": {"app": 1}})],
            r"workloads\[0\].spec.selector.app: expected a string, got int",
        ),
        (
            [workload("ReplicationController", spec={"selector": ["app"]})],
            r"workloads\[0\].spec.selector: expected a map of strings, got list",
        ),
        ([selector("app=web")], r"workloads\[0\].spec.selector: expected a label selector"),
        (
            [selector({"matchLabel": {"app": "web"}})],
            r"workloads\[0\].spec.selector.matchLabel: unknown field; accepted: matchLabels",
        ),
        (
            [selector({"matchLabels": {"app": None}})],
            r"workloads\[0\].spec.selector.matchLabels.app: expected a string",
        ),
        (
            [selector({"matchExpressions": {}})],
            r"workloads\[0\].spec.selector.matchExpressions: expected a list",
        ),
        (
            [selector({"matchExpressions": [{"key": "tier", "values": ["a"]}]})],
            r"workloads\[0\].spec.selector.matchExpressions\[0\].operator: missing",
        ),
        (
            [selector({"matchExpressions": [{"key": "t", "operator": "In", "values": "a"}]})],
            r"workloads\[0\].spec.selector.matchExpressions\[0\].values: expected a list",
        ),
    ],
)
def test_a_malformed_workloads_section_is_refused_with_the_field_path(workloads, message):
    with pytest.raises(SnapshotError, match=message):
        loads(pack({**HEADER, "workloads": workloads}))


@pytest.mark.parametrize(
    ("omitted", "message"),
    [
        ("services", "omitted: expected a list, got str"),
        (["services", "deployments"], r"omitted\[1\]: expected one of services, "),
    ],
)
def test_a_malformed_omitted_section_is_refused_with_the_field_path(omitted, message):
    with pytest.raises(SnapshotError, match=message):
        loads(pack({**HEADER, "omitted": omitted}))


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
    reported = '{"v":1,"at":"2026-11-23T00:00:00Z","images":[]}'
    node["metadata"]["annotations"] = {"kubesalvo.io/images": reported, "other": "x"}
    node["spec"] = {"taints": [{"key": "a", "effect": "NoSchedule"}], "podCIDR": "10.0.0.0/24"}
    node["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "lastHeartbeatTime": "t", "message": "ok"},
        {"type": "MemoryPressure", "status": "False"},
    ]
    stripped = snapshot.strip(node)
    assert stripped["spec"] == {"taints": [{"key": "a", "effect": "NoSchedule"}]}
    # The heartbeat dates the kubelet's image list against the image reporter's.
    ready = {"type": "Ready", "status": "True", "lastHeartbeatTime": "t"}
    assert stripped["status"]["conditions"] == [ready]
    assert stripped["metadata"]["annotations"] == {"kubesalvo.io/images": reported}
    assert stripped["status"]["allocatable"] == node["status"]["allocatable"]
    assert stripped["status"]["images"] == node["status"]["images"]
    assert stripped["metadata"]["labels"] == node["metadata"]["labels"]
    assert "nodeInfo" not in stripped["status"]


def test_strip_refuses_kinds_a_snapshot_does_not_hold():
    with pytest.raises(ValueError, match="not 'Deployment'"):
        snapshot.strip({"kind": "Deployment"})


FULL_REPLICASET = {
    "kind": "ReplicaSet",  # list items carry no kind: the recorder sets it
    "metadata": {"name": "web-abc", "namespace": "team-a", "uid": "rs1",
                 "labels": {"app": "web"}, "resourceVersion": "7",
                 "ownerReferences": [{"kind": "Deployment", "name": "web", "uid": "d1"}]},
    "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}}},
    "status": {"replicas": 3},
}  # fmt: skip


def test_strip_workload_keeps_identity_and_selector_only():
    assert snapshot.strip(FULL_REPLICASET) == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-abc", "namespace": "team-a", "uid": "rs1"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
    service = {
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "team-a", "uid": "s1"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], "clusterIP": "10.0.0.1"},
    }
    assert snapshot.strip(service)["spec"] == {"selector": {"app": "web"}}
    # A Service without selector selects no pod: it keeps no selector at all.
    headless = {"kind": "Service", "metadata": {"name": "x", "namespace": "a"}, "spec": {}}
    assert snapshot.strip(headless)["spec"] == {}
    # An empty LabelSelector selects every pod: it is kept as it is.
    everything = {**FULL_REPLICASET, "kind": "StatefulSet", "spec": {"selector": {}}}
    assert snapshot.strip(everything)["spec"] == {"selector": {}}


def test_from_objects_leaves_out_finished_pods_and_strips_the_rest():
    done = {**FULL_POD, "status": {"phase": "Succeeded"}}
    snap = snapshot.from_objects(
        make_nodes(2),
        [FULL_POD, done],
        namespace_objects(["team-a"]),
        workloads=[FULL_REPLICASET],
        omitted=["services"],
    )
    assert [p["metadata"]["name"] for p in snap.pods] == ["web-1"]
    assert "volumes" not in snap.pods[0]["spec"]
    assert snap.namespaces[0]["metadata"]["labels"]["tier"] == "frontend"
    assert [w["spec"] for w in snap.workloads] == [{"selector": {"matchLabels": {"app": "web"}}}]
    restored = loads(dumps(snap))
    assert restored.pods == snap.pods
    assert restored.workloads == snap.workloads and restored.omitted == ["services"]


def test_synthetic_objects_survive_stripping_unchanged_where_it_matters():
    for pod in make_pods(200, seed=2, shape="mixed"):
        stripped = snapshot.strip_pod(pod)
        for key in ("containers", "affinity", "tolerations", "topologySpreadConstraints"):
            assert stripped["spec"].get(key) == pod["spec"].get(key)
    for pc in priority_class_objects():
        assert snapshot.strip(pc)["value"] == pc["value"]


def test_storage_objects_and_pod_volumes_survive_a_round_trip():
    claim = {"metadata": {"name": "data", "namespace": "ns"}, "spec": {"volumeName": "pv"}}
    volume = {"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "1Gi"}}}
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "containers": [{"name": "c"}],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "cfg", "configMap": {"name": "x"}},
            ],
        },
    }
    taken = from_objects(
        [], [pod], storage={"persistentvolumeclaims": [claim], "persistentvolumes": [volume]}
    )
    restored = loads(dumps(taken))
    assert restored.storage == {"persistentvolumeclaims": [claim], "persistentvolumes": [volume]}
    # The claim's volume is kept, the configMap (no filter reads it) is not.
    assert restored.pods[0]["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    ]


def test_device_objects_and_pod_claims_survive_a_round_trip():
    gpu = {"metadata": {"name": "gpu.example.com"}, "spec": {"selectors": []}}
    slice_ = {"metadata": {"name": "n1-gpu"}, "spec": {"driver": "gpu.example.com",
              "nodeName": "n1", "pool": {"name": "n1", "generation": 1,
              "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]}}  # fmt: skip
    claim = {
        "metadata": {"name": "p-gpu-x1", "namespace": "ns", "uid": "c1"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com", "count": 1}}]}},
        "status": {},
    }  # fmt: skip
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        },
        "status": {
            "phase": "Pending",
            "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x1"}],
        },
    }
    devices = {"deviceclasses": [gpu], "resourceclaims": [claim], "resourceslices": [slice_]}
    taken = from_objects([], [pod], devices=devices, omitted=["resourceslices"])
    restored = loads(dumps(taken))
    assert restored.devices == devices
    assert restored.omitted == ["resourceslices"]
    # The pod keeps what DynamicResources reads: its claims and the names of those made.
    assert restored.pods[0]["spec"]["resourceClaims"] == pod["spec"]["resourceClaims"]
    assert restored.pods[0]["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": "p-gpu-x1"}
    ]


def test_a_version_3_snapshot_reads_as_a_cluster_without_devices():
    document = msgpack.unpackb(dumps(Snapshot(nodes=[], pods=[])))
    document["version"] = 3
    del document["devices"]
    assert loads(pack(document)).devices == {}
