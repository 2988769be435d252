"""Informers: typed decoding, the store's exactly-once changes and line splitting on their
own, then list/watch against the real API server (through the fault proxy for drops and
410 Gone)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from kubesalvo.core.resources import host_ports, node_allocatable, pod_requests
from kubesalvo.core.state import ClusterState
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.informers import (
    ADDED,
    DELETED,
    MODIFIED,
    NAMESPACES,
    NODES,
    PODDISRUPTIONBUDGETS,
    PODS,
    SYNCED,
    Informer,
    Store,
    WatchSettings,
    to_api_dict,
)
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
    "schedulingGates": [{"name": "wait"}],
    "volumes": [{"name": "v", "emptyDir": {}},
      {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
      {"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {}}]}}]},
  "status": {"phase": "Pending", "qosClass": "Burstable",
    "containerStatuses": [{"name": "c", "ready": false, "restartCount": 0,
      "allocatedResources": {"cpu": "750m"}, "resources": {"requests": {"cpu": "750m"}}}],
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
    # Volumes keep only the sources that volume filters inspect.
    assert as_dict["spec"]["volumes"] == [
        {"name": "v"},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
        {"name": "kube-api-access"},
    ]
    assert as_dict["status"]["containerStatuses"] == [
        {
            "name": "c",
            "resources": {"requests": {"cpu": "750m"}},
            "allocatedResources": {"cpu": "750m"},
        }
    ]
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


def test_a_node_condition_keeps_its_heartbeat_which_may_be_null():
    # metav1.Time's zero value is serialised as null: conditions that no kubelet
    # heartbeats (set by other controllers, or by kwok at creation) carry it.
    node = msgspec.json.decode(
        b"""{"metadata": {"name": "n1"}, "status": {"conditions": [
          {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-23T23:40:05Z"},
          {"type": "NetworkUnavailable", "status": "False", "lastHeartbeatTime": null}]}}""",
        type=Node,
    )
    conditions = to_api_dict(node)["status"]["conditions"]
    assert conditions == [
        {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-23T23:40:05Z"},
        {"type": "NetworkUnavailable", "status": "False"},
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


@pytest.mark.parametrize(
    ("resource", "namespace", "path"),
    [
        (PODS, None, "/api/v1/pods"),
        (PODS, "team-a", "/api/v1/namespaces/team-a/pods"),
        (PODDISRUPTIONBUDGETS, "a", "/apis/policy/v1/namespaces/a/poddisruptionbudgets"),
    ],
)
def test_a_namespace_is_watched_through_its_namespaced_path(resource, namespace, path):
    assert resource.collection(namespace) == path


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


# -- against the real API server ---------------------------------------------------------


def pod_informer(client: ApiClient, namespace: str, seen: list, **settings) -> Informer:
    settings.setdefault("backoff_initial", 0.05)
    watch = WatchSettings(namespace=namespace, **settings)
    return Informer(client, PODS, seen.append, watch)


def named(seen: list) -> list[tuple[str, str | None]]:
    return [(c.type, c.obj.metadata.name if c.obj else None) for c in seen]


async def delete_pod(api: ApiClient, namespace: str, name: str) -> None:
    await api.request(
        "DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", params={"gracePeriodSeconds": "0"}
    )


@pytest.mark.integration
async def test_list_is_paginated_and_watch_sees_creates_updates_and_deletes(
    api, namespace, create_pod, eventually
):
    for i in range(5):
        await create_pod(namespace, f"before-{i}")
    seen: list = []
    informer = pod_informer(api, namespace, seen, page_size=2)
    informer.start()
    try:
        await asyncio.wait_for(informer.synced.wait(), 20)
        assert sorted(n for t, n in named(seen) if t == ADDED) == [f"before-{i}" for i in range(5)]
        assert named(seen)[-1] == (SYNCED, None)

        await create_pod(namespace, "after")
        patch = b'{"metadata":{"labels":{"tier":"gold"}}}'
        await api.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/before-0",
            body=patch,
            content_type="application/merge-patch+json",
        )
        await delete_pod(api, namespace, "before-1")
        await eventually(lambda: (DELETED, "before-1") in named(seen), what="the delete")
        assert (ADDED, "after") in named(seen)
        modified = [c for c in seen if c.type == MODIFIED and c.obj.metadata.name == "before-0"]
        assert modified[0].obj.metadata.labels["tier"] == "gold"
        assert "tier" not in modified[0].old.metadata.labels
        assert "ns/before-1" not in informer.store and len(informer.store) == 5
        assert informer.state.lists == 1
    finally:
        await informer.stop()


@pytest.mark.integration
async def test_watch_resumes_after_a_dropped_connection_without_relisting_or_repeating(
    proxied_api, proxy, api, namespace, create_pod, eventually
):
    await create_pod(namespace, "first")
    seen: list = []
    informer = pod_informer(proxied_api, namespace, seen)
    informer.start()
    try:
        await asyncio.wait_for(informer.synced.wait(), 20)
        await eventually(lambda: proxy.stats.watches >= 1, what="the first watch")
        for round_ in range(3):
            assert proxy.drop_watches() >= 1
            await create_pod(namespace, f"while-dropped-{round_}")
            await eventually(
                lambda r=round_: (ADDED, f"while-dropped-{r}") in named(seen),
                what=f"the pod created after drop {round_}",
            )
            await eventually(lambda r=round_: proxy.stats.watches >= r + 2, what="a new watch")
        adds = [n for t, n in named(seen) if t == ADDED]
        assert sorted(adds) == sorted({*adds})  # nothing delivered twice
        assert informer.state.lists == 1
        assert proxy.stats.dropped >= 3
    finally:
        await informer.stop()


@pytest.mark.integration
async def test_a_silent_watch_is_abandoned_after_the_inactivity_timeout(
    proxied_api, proxy, namespace, create_pod, eventually
):
    seen: list = []
    informer = pod_informer(proxied_api, namespace, seen, inactivity_timeout=1.0)
    informer.start()
    try:
        await asyncio.wait_for(informer.synced.wait(), 20)
        await eventually(lambda: proxy.stats.watches >= 1, what="the first watch")
        proxy.faults.stall_watches = 1
        proxy.drop_watches()
        await eventually(lambda: proxy.stats.stalled == 1, what="a stalled watch")
        await create_pod(namespace, "during-the-silence")
        await eventually(
            lambda: (ADDED, "during-the-silence") in named(seen), what="the pod after the stall"
        )
        assert informer.state.lists == 1
        assert isinstance(informer.state.last_error, TimeoutError)
    finally:
        await informer.stop()


@pytest.mark.integration
@pytest.mark.parametrize("as_event", [True, False], ids=["error-event", "http-410"])
async def test_410_gone_relists_and_reports_what_changed_meanwhile(
    as_event, proxied_api, proxy, api, namespace, create_pod, eventually
):
    for name in ("stays", "goes", "changes"):
        await create_pod(namespace, name)
    seen: list = []
    informer = pod_informer(proxied_api, namespace, seen)
    informer.start()
    try:
        await asyncio.wait_for(informer.synced.wait(), 20)
        await eventually(lambda: proxy.stats.watches >= 1, what="the first watch")
        # Take the watch path down, change things, then answer the next watch with 410.
        proxy.faults.refuse_watches = True
        proxy.drop_watches()
        await delete_pod(api, namespace, "goes")
        await api.request(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/changes",
            body=b'{"metadata":{"labels":{"v":"2"}}}',
            content_type="application/merge-patch+json",
        )
        await create_pod(namespace, "new")
        seen.clear()
        proxy.faults.gone_as_event = as_event
        proxy.faults.gone_watches = 1
        proxy.faults.refuse_watches = False
        await eventually(lambda: (SYNCED, None) in named(seen), what="the relist")
        assert named(seen) == [
            (DELETED, "goes"),
            (MODIFIED, "changes"),
            (ADDED, "new"),
            (SYNCED, None),
        ]
        assert informer.state.lists == 2 and proxy.stats.gone == 1
        await create_pod(namespace, "after-relist")
        await eventually(lambda: (ADDED, "after-relist") in named(seen), what="watching again")
    finally:
        await informer.stop()


@pytest.mark.integration
async def test_namespaces_and_pdbs_decode_from_the_real_server(api, namespace, eventually):
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
    }
    await api.request(
        "POST",
        f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
        body=msgspec.json.encode(pdb),
    )
    namespaces = Informer(api, NAMESPACES)
    pdbs = Informer(api, PODDISRUPTIONBUDGETS)
    for informer in (namespaces, pdbs):
        informer.start()
    try:
        await asyncio.wait_for(asyncio.gather(namespaces.synced.wait(), pdbs.synced.wait()), 20)
        assert namespaces.store.get(namespace).status.phase == "Active"
        budget = pdbs.store.get(f"{namespace}/web")
        assert budget.spec.min_available == "50%"
        assert to_api_dict(budget)["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    finally:
        await namespaces.stop()
        await pdbs.stop()


@pytest.mark.integration
async def test_the_typed_view_gives_core_the_same_answers_as_the_full_objects(
    api, control_plane, namespace, create_pod
):
    """The contract with kubesalvo.core: nothing it reads is lost by the typed decoding."""
    control_plane.add_nodes(3)
    await create_pod(
        namespace,
        "sized",
        initContainers=[
            {"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "2"}}},
            {
                "name": "sidecar",
                "image": "envoy",
                "restartPolicy": "Always",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            },
        ],
        containers=[
            {
                "name": "c",
                "image": "nginx",
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                "ports": [{"containerPort": 80, "hostPort": 8080}],
            }
        ],
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    )
    raw_nodes = msgspec.json.decode((await api.request("GET", "/api/v1/nodes")).body)["items"]
    raw_pod = msgspec.json.decode(
        (await api.request("GET", f"/api/v1/namespaces/{namespace}/pods/sized")).body
    )
    nodes = Informer(api, NODES)
    pods = pod_informer(api, namespace, [])
    for informer in (nodes, pods):
        informer.start()
    try:
        await asyncio.wait_for(asyncio.gather(nodes.synced.wait(), pods.synced.wait()), 20)
    finally:
        await nodes.stop()
        await pods.stop()

    typed_pod = to_api_dict(pods.store.get(f"{namespace}/sized"))
    assert pod_requests(typed_pod) == pod_requests(raw_pod)
    assert pod_requests(typed_pod, nonzero_defaults=True) == pod_requests(
        raw_pod, nonzero_defaults=True
    )
    assert host_ports(typed_pod) == host_ports(raw_pod)
    from_typed, from_raw = ClusterState(), ClusterState()
    for raw in raw_nodes:
        typed = to_api_dict(nodes.store.get(raw["metadata"]["name"]))
        assert node_allocatable(typed) == node_allocatable(raw)
        from_typed.add_node(typed)
        from_raw.add_node(raw)
    rows = from_raw.rows
    assert from_typed.rows == rows
    assert (from_typed.allocatable[:rows] == from_raw.allocatable[:rows]).all()
    assert (from_typed.ready[:rows] == from_raw.ready[:rows]).all()
    assert (from_typed.unschedulable[:rows] == from_raw.unschedulable[:rows]).all()
    assert from_typed.node_labels == from_raw.node_labels
    assert from_typed.taint_list == from_raw.taint_list
    assert from_typed.images == from_raw.images
