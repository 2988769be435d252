"""Informers without a server: typed decoding, the store's exactly-once changes, lines.

List/watch against the real API server is in test_informers_integration.py.
"""

from __future__ import annotations

import msgspec
import pytest

from kubesalvo.sched.informers import ADDED, DELETED, MODIFIED, SYNCED, Store, to_api_dict
from kubesalvo.sched.informers.models import Node, ObjectList, Pod, PodDisruptionBudget
from kubesalvo.sched.informers.watch import iter_lines

POD_JSON = b"""{
  "kind": "Pod", "apiVersion": "v1",
  "metadata": {"name": "web-1", "namespace": "team-a", "uid": "u1", "resourceVersion": "42",
    "labels": {"app": "web"}, "creationTimestamp": "2026-01-01T00:00:00Z",
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-6c9",
      "uid": "rs1", "controller": true, "blockOwnerDeletion": true}],
    "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]},
  "spec": {"schedulerName": "kubesalvo", "priority": 0, "nodeSelector": {"disk": "ssd"},
    "containers": [{"name": "c", "image": "nginx:1.27", "env": [{"name": "A", "value": "b"}],
      "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
      "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP", "hostIP": "0.0.0.0"}]}],
    "initContainers": [{"name": "sidecar", "image": "envoy", "restartPolicy": "Always"}],
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
      "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]}]}]}},
      "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10,
        "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "kubernetes.io/hostname"}}]}},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
      "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}},
      "matchLabelKeys": ["pod-template-hash"]}],
    "schedulingGates": [{"name": "wait"}], "volumes": [{"name": "v", "emptyDir": {}}]},
  "status": {"phase": "Pending", "qosClass": "Burstable",
    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
      "lastTransitionTime": "2026-01-01T00:00:01Z"}]}
}"""


def test_a_pod_decodes_into_the_fields_scheduling_reads():
    pod = msgspec.json.decode(POD_JSON, type=Pod)
    assert pod.metadata.uid == "u1"
    assert pod.metadata.owner_references[0].controller is True
    assert pod.spec.containers[0].resources.requests == {"cpu": "500m", "memory": "1Gi"}
    assert pod.spec.containers[0].ports[0].host_ip == "0.0.0.0"
    assert pod.spec.init_containers[0].restart_policy == "Always"
    assert pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    assert pod.spec.scheduling_gates[0].name == "wait"
    assert pod.status.conditions[0].reason == "Unschedulable"


def test_the_api_dict_of_a_pod_has_the_apis_keys_and_none_of_the_unread_fields():
    as_dict = to_api_dict(msgspec.json.decode(POD_JSON, type=Pod))
    original = msgspec.json.decode(POD_JSON)
    assert "managedFields" not in as_dict["metadata"]
    assert "env" not in as_dict["spec"]["containers"][0]
    assert "volumes" not in as_dict["spec"]
    # Every field that is kept has the same name and value as in the API's JSON.
    assert as_dict["spec"]["affinity"] == original["spec"]["affinity"]
    assert (
        as_dict["spec"]["topologySpreadConstraints"]
        == original["spec"]["topologySpreadConstraints"]
    )
    assert as_dict["spec"]["containers"][0]["ports"] == original["spec"]["containers"][0]["ports"]
    assert as_dict["spec"]["priority"] == 0
    assert as_dict["metadata"]["ownerReferences"][0]["uid"] == "rs1"


def test_a_node_decodes_with_capacity_taints_and_images():
    node = msgspec.json.decode(
        b"""{"metadata": {"name": "n1", "uid": "n", "resourceVersion": "7",
          "labels": {"zone": "a"}},
        "spec": {"unschedulable": true,
          "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "4", "pods": "110"}, "capacity": {"cpu": "4"},
          "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
          "images": [{"names": ["nginx:1.27"], "sizeBytes": 70000000}],
          "nodeInfo": {"kubeletVersion": "v1.34.4"}}}""",
        type=Node,
    )
    assert node.spec.unschedulable and node.spec.taints[0].effect == "NoSchedule"
    assert node.status.images[0].size_bytes == 70_000_000
    assert to_api_dict(node)["status"]["images"] == [
        {"names": ["nginx:1.27"], "sizeBytes": 70000000}
    ]


@pytest.mark.parametrize("value", [1, "50%"])
def test_a_pdb_keeps_int_or_string_budgets(value):
    body = msgspec.json.encode(
        {
            "metadata": {"name": "p", "namespace": "a"},
            "spec": {"minAvailable": value},
            "status": {"disruptionsAllowed": 2},
        }
    )
    pdb = msgspec.json.decode(body, type=PodDisruptionBudget)
    assert pdb.spec.min_available == value and pdb.status.disruptions_allowed == 2


def test_a_list_page_decodes_its_items_and_continue_token():
    page = msgspec.json.decode(
        b'{"metadata": {"resourceVersion": "9", "continue": "tok"}, "items": [' + POD_JSON + b"]}",
        type=ObjectList[Pod],
    )
    assert page.metadata.continue_ == "tok" and page.items[0].metadata.name == "web-1"


def pod(name: str, rv: str, uid: str | None = None) -> Pod:
    return msgspec.json.decode(
        msgspec.json.encode(
            {
                "metadata": {
                    "name": name,
                    "namespace": "ns",
                    "uid": uid or f"uid-{name}",
                    "resourceVersion": rv,
                }
            }
        ),
        type=Pod,
    )


def kinds(changes):
    return [(c.type, c.obj.metadata.name if c.obj else None) for c in changes]


def test_a_redelivered_watch_event_changes_nothing():
    store = Store()
    assert kinds(store.apply_event("ADDED", pod("a", "1"))) == [(ADDED, "a")]
    assert store.apply_event("ADDED", pod("a", "1")) == []
    assert store.apply_event("MODIFIED", pod("a", "1")) == []
    assert kinds(store.apply_event("MODIFIED", pod("a", "2"))) == [(MODIFIED, "a")]


def test_a_modification_carries_the_old_object():
    store = Store()
    store.apply_event("ADDED", pod("a", "1"))
    (change,) = store.apply_event("MODIFIED", pod("a", "2"))
    assert change.old.metadata.resource_version == "1"
    assert change.obj.metadata.resource_version == "2"


def test_a_delete_of_an_unknown_or_replaced_object_is_dropped():
    store = Store()
    assert store.apply_event("DELETED", pod("ghost", "3")) == []
    store.apply_event("ADDED", pod("a", "5", uid="new"))
    assert store.apply_event("DELETED", pod("a", "4", uid="old")) == []
    assert "ns/a" in store


def test_an_object_recreated_under_the_same_name_is_a_delete_then_an_add():
    store = Store()
    store.apply_event("ADDED", pod("a", "1", uid="old"))
    changes = store.apply_event("ADDED", pod("a", "9", uid="new"))
    assert [(c.type, c.obj.metadata.uid) for c in changes] == [(DELETED, "old"), (ADDED, "new")]


def test_a_relist_reports_vanished_changed_and_new_objects_then_synced():
    store = Store()
    for name in ("keep", "change", "vanish"):
        store.apply_event("ADDED", pod(name, "1"))
    changes = store.replace([pod("keep", "1"), pod("change", "2"), pod("new", "3")])
    assert kinds(changes) == [
        (DELETED, "vanish"),
        (MODIFIED, "change"),
        (ADDED, "new"),
        (SYNCED, None),
    ]
    assert sorted(store.keys()) == ["ns/change", "ns/keep", "ns/new"]


def test_the_first_list_adds_everything_and_syncs_even_when_empty():
    assert kinds(Store().replace([])) == [(SYNCED, None)]
    assert kinds(Store().replace([pod("a", "1")])) == [(ADDED, "a"), (SYNCED, None)]


class Chunks:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def iter_any(self):
        for chunk in self.chunks:
            yield chunk


async def test_lines_are_split_across_chunk_boundaries_without_a_length_limit():
    big = b"x" * 200_000
    chunks = [b'{"a":1}\n{"b":', b"2}\n" + big[:100_000], big[100_000:] + b"\n", b"\n", b"tail"]
    lines = [line async for line in iter_lines(Chunks(chunks))]
    assert lines == [b'{"a":1}', b'{"b":2}', big, b"tail"]
