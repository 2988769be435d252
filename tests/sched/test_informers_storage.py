"""The storage informers: claims, volumes, classes and CSI objects decoded to the fields
the volume filters read, handed to the scheduler cache (held back while a burst runs), and
listed and watched from the real API server."""

from __future__ import annotations

import asyncio
import json

import msgspec
import pytest

from kubesalvo.core import volumes
from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.informers import Informer
from kubesalvo.sched.informers.storage import (
    PERSISTENTVOLUMECLAIMS,
    STORAGE_RESOURCES,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    storage_handler,
)
from kubesalvo.sched.informers.store import ADDED, DELETED, MODIFIED, Change
from kubesalvo.sched.informers.watch import WatchSettings

CLAIM = {
    "metadata": {
        "name": "data",
        "namespace": "ns",
        "uid": "u1",
        "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
        "managedFields": [{"manager": "kube-controller-manager"}],
    },
    "spec": {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
        "storageClassName": "",
        "volumeName": "pv-1",
        "volumeMode": "Filesystem",
    },
    "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}},
}


def test_a_claim_keeps_what_the_filters_read_and_an_empty_class_name_stays_empty():
    claim = msgspec.json.decode(json.dumps(CLAIM), type=PersistentVolumeClaim)
    seen = []
    sink = type("Sink", (), {"put_storage": lambda _, *a: seen.append(a)})()
    storage_handler(sink, volumes.CLAIMS)(Change(ADDED, claim))
    ((kind, obj),) = seen
    assert kind == volumes.CLAIMS
    assert obj["spec"]["storageClassName"] == ""  # no class, not "the default class"
    assert obj["spec"]["volumeName"] == "pv-1" and obj["status"] == {"phase": "Bound"}
    assert "managedFields" not in obj["metadata"] and volumes.is_fully_bound(obj)
    unset = dict(CLAIM, spec={"accessModes": ["ReadWriteOnce"]})
    decoded = msgspec.json.decode(json.dumps(unset), type=PersistentVolumeClaim)
    assert "storageClassName" not in msgspec.to_builtins(decoded)["spec"]


def test_volumes_and_classes_keep_node_affinity_csi_and_binding_mode():
    pv = {
        "metadata": {"name": "pv-1", "labels": {"topology.kubernetes.io/zone": "za"}},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "csi": {"driver": "d.example.com", "volumeHandle": "h1", "fsType": "ext4"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}
                    ]
                }
            },
            "claimRef": {"namespace": "ns", "name": "data", "uid": "u1"},
        },
    }
    obj = msgspec.to_builtins(msgspec.json.decode(json.dumps(pv), type=PersistentVolume))
    assert obj["spec"]["csi"] == {"driver": "d.example.com", "volumeHandle": "h1"}
    assert obj["spec"]["nodeAffinity"] == pv["spec"]["nodeAffinity"]
    assert obj["spec"]["claimRef"]["name"] == "data"
    sc = {"metadata": {"name": "local"}, "provisioner": "p", "volumeBindingMode": "Immediate"}
    assert msgspec.to_builtins(msgspec.json.decode(json.dumps(sc), type=StorageClass)) == sc


def test_changes_reach_the_state_after_a_running_burst_not_during_it():
    cache = SchedulerCache()
    handle = storage_handler(cache, volumes.CLAIMS)
    claim = msgspec.json.decode(json.dumps(CLAIM), type=PersistentVolumeClaim)
    with cache.frozen() as state:
        handle(Change(ADDED, claim))
        assert state.storage.claim("ns", "data") is None
    assert cache.state.storage.claim("ns", "data") is not None
    version = cache.state.storage.version
    handle(Change(MODIFIED, claim, claim))
    assert cache.state.storage.version == version + 1
    handle(Change(DELETED, claim))
    assert cache.state.storage.claim("ns", "data") is None


@pytest.mark.integration
async def test_claims_are_listed_and_watched_from_the_api_server(api, namespace, eventually):
    cache = SchedulerCache()
    settings = WatchSettings(namespace=namespace, backoff_initial=0.05)
    informer = Informer(
        api, PERSISTENTVOLUMECLAIMS, storage_handler(cache, volumes.CLAIMS), settings
    )
    body = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "before"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    await api.request("POST", path, body=json.dumps(body).encode())
    informer.start()
    try:
        await asyncio.wait_for(informer.synced.wait(), 20)
        assert cache.state.storage.claim(namespace, "before") is not None
        body["metadata"] = {"name": "after"}
        await api.request("POST", path, body=json.dumps(body).encode())
        await eventually(lambda: cache.state.storage.claim(namespace, "after") is not None)
        # With kube-controller-manager's PVC protection the claim keeps its finalizer and
        # is marked as being deleted; without it, it goes.
        await api.request("DELETE", f"{path}/before")

        def deleting() -> bool:
            claim = cache.state.storage.claim(namespace, "before")
            return claim is None or "deletionTimestamp" in claim["metadata"]

        await eventually(deleting)
    finally:
        await informer.stop()


@pytest.mark.integration
async def test_every_storage_kind_lists_from_the_api_server(api):
    for resource in STORAGE_RESOURCES:
        response = await api.request("GET", resource.path, params={"limit": "1"})
        assert msgspec.json.decode(response.body)["kind"].endswith("List"), resource.plural


def test_a_csinode_whose_driver_has_null_topology_keys_decodes():
    # The API server writes topologyKeys: null for a driver without any (seen on v1.34).
    raw = {
        "metadata": {"name": "n1"},
        "spec": {
            "drivers": [
                {"name": "d", "nodeID": "n1", "topologyKeys": None, "allocatable": {"count": 1}}
            ]
        },
    }
    node = msgspec.to_builtins(msgspec.json.decode(json.dumps(raw), type=CSINode))
    assert node["spec"]["drivers"][0]["allocatable"] == {"count": 1}


def test_each_change_is_handed_on_as_a_cluster_event_after_the_state_has_it():
    cache = SchedulerCache()
    seen = []

    def on_event(event, old, new):
        seen.append((event.label, old is not None, new is not None))
        assert cache.state.storage.claim("ns", "data") is (None if new is None else new)

    handle = storage_handler(cache, volumes.CLAIMS, on_event)
    claim = msgspec.json.decode(json.dumps(CLAIM), type=PersistentVolumeClaim)
    handle(Change(ADDED, claim))
    handle(Change(MODIFIED, claim, claim))
    handle(Change(DELETED, claim))
    assert seen == [
        ("PersistentVolumeClaimAdd", False, True),
        ("PersistentVolumeClaimUpdate", True, True),
        ("PersistentVolumeClaimDelete", True, False),
    ]
