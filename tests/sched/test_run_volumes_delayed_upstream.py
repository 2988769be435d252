"""Unbound WaitForFirstConsumer claims with kube-scheduler v1.34 and ``kubesalvo run`` on
one control plane (kube-controller-manager's PV controller finishing the bindings), each
scheduler with its own schedulerName, claims and volumes:

* ``static``: local volumes on nodes A (10Gi) and B (1Gi, too small), node C with the
  most room and none: the pod goes to A and its claim ends bound to A's volume;
* ``provisioned``: a class with a provisioner and allowedTopologies zone zb: the claim
  gets ``volume.kubernetes.io/selected-node`` B, the test plays the provisioner (a volume
  for the claim on that node), and the pod is bound only once the claim is;
* ``none-fits``: a claim bigger than every volume of a class without provisioner stays
  pending with the same text from both.

Compared: the pod's node, the volume the claim is bound to, the selected node, and the
PodScheduled=False texts.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import pytest

from kubesalvo.sched.cluster import start_kube_scheduler
from tests.helpers.volumes import HOSTNAME, ZONE
from tests.sched.test_app import (
    CONFIG,
    SchedulerProcess,
    delete_pods,
    list_objects,
    pod_outcomes,
    pod_scheduled,
)
from tests.sched.test_run_volumes_upstream import _node, claim_volume, start_both, volume_pod

pytestmark = pytest.mark.integration

SELECTED_NODE = "volume.kubernetes.io/selected-node"
# The burst of issue 25: 50 pods for 40 local volumes, two on each of 20 nodes.
RACE_NODES, RACE_PODS = 20, 50
RACE_VOLUMES = 2 * RACE_NODES


def _class(name: str, provisioner: str, zone: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    if zone:
        obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": [zone]}]}]
    return obj


def _volume(name: str, class_name: str, node: str, size: str, claim: Any = None) -> dict:
    term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": class_name,
        "local": {"path": f"/mnt/{name}"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
    }
    if claim is not None:
        spec["claimRef"] = claim
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": spec,
    }


def _claim(namespace: str, name: str, class_name: str, size: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": class_name,
        },
    }


def _pod(namespace: str, name: str, scheduler: str, pool: str, claim: str) -> dict[str, Any]:
    return volume_pod(namespace, name, scheduler, pool, [claim_volume(claim)])


def test_wait_for_first_consumer_claims_are_bound_as_kube_scheduler_binds_them(
    control_plane, namespace, tmp_path
):
    pool = secrets.token_hex(3)
    a, b, c = (f"wffc-{pool}-{n}" for n in "abc")
    nodes = [_node(a, pool, "za", "4"), _node(b, pool, "zb", "4"), _node(c, pool, "zc", "16")]
    fast = f"fast-{pool}"
    provisioner = f"example.com/{pool}"
    classes = [_class(fast, provisioner, "zb")]
    upstream_name = f"upstream-{pool}"
    schedulers = {"kubesalvo": "ours", upstream_name: "theirs"}
    volumes, claims, pods = [], [], []
    for scheduler, who in schedulers.items():
        # A class of local volumes per scheduler: neither takes the other's volumes.
        local = f"local-{pool}-{who}"
        classes.append(_class(local, "kubernetes.io/no-provisioner"))
        volumes.append(_volume(f"{pool}-a-{who}", local, a, "10Gi"))
        volumes.append(_volume(f"{pool}-b-{who}", local, b, "1Gi"))
        claims.append(_claim(namespace, f"static-{who}", local, "5Gi"))
        claims.append(_claim(namespace, f"provisioned-{who}", fast, "1Gi"))
        claims.append(_claim(namespace, f"none-fits-{who}", local, "50Gi"))
        for case in ("static", "provisioned", "none-fits"):
            pods.append(_pod(namespace, f"{case}-{who}", scheduler, pool, f"{case}-{who}"))
    control_plane.create(nodes)
    control_plane.create(classes)
    control_plane.create(volumes)
    control_plane.create(claims)
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"

    def available() -> bool:
        found = list_objects(control_plane, "/api/v1/persistentvolumes")
        ours = [v for v in found if v["metadata"]["name"].startswith(pool)]
        return len(ours) == len(volumes) and all(
            (v.get("status") or {}).get("phase") == "Available" for v in ours
        )

    deadline = time.monotonic() + 60
    while not available():
        assert time.monotonic() < deadline, "volumes never became Available"
        time.sleep(0.5)
    upstream, process = start_both(control_plane, tmp_path, upstream_name, "wffc")
    provisioned: set[str] = set()

    def play_provisioner() -> None:
        """A volume on the selected node for each claim of our class that asks for one."""
        for claim in list_objects(control_plane, claims_path):
            meta = claim["metadata"]
            node = (meta.get("annotations") or {}).get(SELECTED_NODE)
            if not node or meta["name"] in provisioned or claim["spec"]["storageClassName"] != fast:
                continue
            ref = {"namespace": namespace, "name": meta["name"], "uid": meta["uid"]}
            volume = _volume(f"{pool}-pvc-{meta['uid']}", fast, node, "1Gi", ref)
            control_plane.create([volume])
            volumes.append(volume)
            provisioned.add(meta["name"])

    try:
        process.wait_ready()
        control_plane.create(pods)
        path = f"/api/v1/namespaces/{namespace}/pods"

        deadline = time.monotonic() + 120
        while True:
            play_provisioner()
            seen = pod_outcomes(control_plane, path)
            done = [
                f"{case}-{who}" for case in ("static", "provisioned") for who in ("ours", "theirs")
            ]
            if all(seen.get(n, "").startswith("on ") for n in done) and len(seen) == len(pods):
                break
            assert time.monotonic() < deadline, f"outcomes so far: {seen}\n{process.tail()}"
            time.sleep(1.0)
        bound = {
            c["metadata"]["name"]: (
                c["spec"].get("volumeName", ""),
                (c["metadata"].get("annotations") or {}).get(SELECTED_NODE, ""),
                (c.get("status") or {}).get("phase"),
            )
            for c in list_objects(control_plane, claims_path)
        }
        print(json.dumps({"outcomes": seen, "claims": bound}, indent=1))
        for case in ("static", "provisioned", "none-fits"):
            ours, theirs = seen[f"{case}-ours"], seen[f"{case}-theirs"]
            assert ours == theirs.replace("-theirs", "-ours"), case
        assert seen["static-ours"] == f"on {a}" and seen["provisioned-ours"] == f"on {b}"
        assert bound["static-ours"][0] == f"{pool}-a-ours"
        assert bound["static-theirs"][0] == f"{pool}-a-theirs"
        for who in ("ours", "theirs"):
            assert bound[f"provisioned-{who}"][1] == b
            assert bound[f"provisioned-{who}"][2] == "Bound"
            # The static claim was matched, not provisioned: no node was selected for it.
            assert bound[f"static-{who}"][1] == ""
        assert "didn't find available persistent volumes to bind" in seen["none-fits-ours"]
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, pods)

        control_plane.delete([*claims, *classes, *nodes, *volumes])


def test_a_burst_competing_for_fewer_volumes_never_shares_one(control_plane, namespace, tmp_path):
    """Fifty pods of each scheduler, each with its own WaitForFirstConsumer claim, for forty
    local volumes (two on each of twenty nodes): forty bound, each claim to a volume of its
    own on the pod's node, ten pending with the same text from both schedulers."""
    pool = secrets.token_hex(3)
    hosts = [f"race-{pool}-{i}" for i in range(RACE_NODES)]
    nodes = [_node(h, pool, "za", "8") for h in hosts]
    upstream_name = f"upstream-{pool}"
    schedulers = {"kubesalvo": "ours", upstream_name: "theirs"}
    classes, volumes, claims, pods = [], [], [], []
    for scheduler, who in schedulers.items():
        local = f"race-{pool}-{who}"
        classes.append(_class(local, "kubernetes.io/no-provisioner"))
        for i, host in enumerate(hosts):
            for k in range(2):
                volumes.append(_volume(f"{pool}-{who}-{i}-{k}", local, host, "1Gi"))
        for p in range(RACE_PODS):
            claims.append(_claim(namespace, f"data-{who}-{p}", local, "1Gi"))
            pods.append(_pod(namespace, f"web-{who}-{p}", scheduler, pool, f"data-{who}-{p}"))
    control_plane.create(nodes)
    control_plane.create(classes)
    control_plane.create(volumes)
    control_plane.create(claims)
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    deadline = time.monotonic() + 60
    while not all(
        (v.get("status") or {}).get("phase") == "Available"
        for v in list_objects(control_plane, "/api/v1/persistentvolumes")
        if v["metadata"]["name"].startswith(pool)
    ):
        assert time.monotonic() < deadline, "volumes never became Available"
        time.sleep(0.5)
    upstream, process = start_both(control_plane, tmp_path, upstream_name, "race")
    try:
        process.wait_ready()
        control_plane.create(pods)
        path = f"/api/v1/namespaces/{namespace}/pods"
        deadline = time.monotonic() + 120
        while True:
            seen = pod_outcomes(control_plane, path)
            placed_count = sum(v.startswith("on ") for v in seen.values())
            if len(seen) == len(pods) and placed_count >= 2 * RACE_VOLUMES:
                break
            assert time.monotonic() < deadline, f"outcomes so far: {seen}\n{process.tail()}"
            time.sleep(1.0)
        volume_node = {v["metadata"]["name"]: v["spec"]["nodeAffinity"] for v in volumes}
        claimed = {
            c["metadata"]["name"]: c["spec"].get("volumeName", "")
            for c in list_objects(control_plane, claims_path)
        }
        for who in schedulers.values():
            ours = {k: v for k, v in seen.items() if k.startswith(f"web-{who}-")}
            placed = {k: v for k, v in ours.items() if v.startswith("on ")}
            assert len(placed) == RACE_VOLUMES, (who, ours)
            taken = [claimed[f"data-{who}-{k.rsplit('-', 1)[1]}"] for k in placed]
            assert len(set(taken)) == RACE_VOLUMES and all(taken), (who, taken)
            for pod_name, volume in zip(placed, taken, strict=True):
                node = placed[pod_name].removeprefix("on ")
                term = volume_node[volume]["required"]["nodeSelectorTerms"][0]
                assert term["matchExpressions"][0]["values"] == [node], (pod_name, volume)
        pending = sorted(v for v in seen.values() if not v.startswith("on "))
        assert len(pending) == 2 * (RACE_PODS - RACE_VOLUMES), pending
        assert len(set(pending)) == 1, sorted(set(pending))
        assert f"{RACE_NODES} node(s) didn't find available persistent volumes" in pending[0]
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, pods)

        control_plane.delete([*claims, *classes, *nodes, *volumes])


def test_a_stateful_set_with_volume_claim_templates_lands_on_its_volumes(
    control_plane, namespace, tmp_path
):
    """A StatefulSet per scheduler (Parallel pod management, four replicas) whose
    volumeClaimTemplates use a WaitForFirstConsumer class of local volumes, two per node
    on two nodes (a third, roomier node has none): every pod of each ends on the node of
    the volume its claim is bound to, and no volume serves two claims."""
    pool = secrets.token_hex(3)
    hosts = [f"sts-{pool}-{n}" for n in "abc"]
    nodes = [_node(hosts[0], pool, "za", "4"), _node(hosts[1], pool, "za", "4")]
    nodes.append(_node(hosts[2], pool, "za", "16"))
    upstream_name = f"upstream-{pool}"
    schedulers = {"kubesalvo": "ours", upstream_name: "theirs"}
    classes, volumes, sets = [], [], []
    for scheduler, who in schedulers.items():
        local = f"sts-{pool}-{who}"
        classes.append(_class(local, "kubernetes.io/no-provisioner"))
        for host in hosts[:2]:
            for k in range(2):
                volumes.append(_volume(f"{pool}-{who}-{host[-1]}{k}", local, host, "1Gi"))
        template = _pod(namespace, "x", scheduler, pool, "data")
        template["spec"]["volumes"] = []
        template["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        sets.append(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": f"db-{who}", "namespace": namespace},
                "spec": {
                    "replicas": 4,
                    "podManagementPolicy": "Parallel",
                    "serviceName": f"db-{who}",
                    "selector": {"matchLabels": {"app": f"db-{who}"}},
                    "template": {
                        "metadata": {"labels": {"app": f"db-{who}"}},
                        "spec": template["spec"],
                    },
                    "volumeClaimTemplates": [
                        {
                            "metadata": {"name": "data"},
                            "spec": {
                                "accessModes": ["ReadWriteOnce"],
                                "storageClassName": local,
                                "resources": {"requests": {"storage": "1Gi"}},
                            },
                        }
                    ],
                },
            }
        )
    control_plane.create(nodes)
    control_plane.create(classes)
    control_plane.create(volumes)
    deadline = time.monotonic() + 60
    while not all(
        (v.get("status") or {}).get("phase") == "Available"
        for v in list_objects(control_plane, "/api/v1/persistentvolumes")
        if v["metadata"]["name"].startswith(pool)
    ):
        assert time.monotonic() < deadline, "volumes never became Available"
        time.sleep(0.5)
    upstream, process = start_both(control_plane, tmp_path, upstream_name, "sts")
    path = f"/api/v1/namespaces/{namespace}/pods"
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    try:
        process.wait_ready()
        control_plane.create(sets)
        deadline = time.monotonic() + 120
        while True:
            pods = [
                p
                for p in list_objects(control_plane, path)
                if p["metadata"]["name"].startswith("db-")
            ]
            if len(pods) == 8 and all((p.get("spec") or {}).get("nodeName") for p in pods):
                break
            assert time.monotonic() < deadline, (
                [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods],
                process.tail(),
            )
            time.sleep(1.0)
        volume_host = {v["metadata"]["name"]: v["metadata"]["name"] for v in volumes}
        claims = {
            c["metadata"]["name"]: c["spec"].get("volumeName", "")
            for c in list_objects(control_plane, claims_path)
        }
        for who in schedulers.values():
            taken = []
            for pod in pods:
                name = pod["metadata"]["name"]
                if not name.startswith(f"db-{who}-"):
                    continue
                volume = claims[f"data-{name}"]
                assert volume in volume_host, (name, volume)
                # The volume's name ends with its host's letter and an index.
                assert pod["spec"]["nodeName"][-1] == volume[-2], (name, volume)
                taken.append(volume)
            assert len(taken) == 4 and len(set(taken)) == 4, (who, taken)
    finally:
        process.kill()
        upstream.stop()

        control_plane.delete([*sets, *classes, *nodes, *volumes])


def test_a_volume_never_provisioned_times_out_in_prebind_with_upstreams_text(
    control_plane, namespace, tmp_path
):
    """bindTimeoutSeconds 2 and no provisioner at work: both schedulers write the selected
    node, wait, give up with the same text and leave the pod unbound."""
    pool = secrets.token_hex(3)
    host = f"slow-{pool}"
    nodes = [_node(host, pool, "za", "4")]
    slow = f"slow-{pool}"
    classes = [_class(slow, f"example.com/{pool}")]
    upstream_name = f"upstream-{pool}"
    schedulers = {"kubesalvo": "ours", upstream_name: "theirs"}
    claims = [_claim(namespace, f"slow-{who}", slow, "1Gi") for who in schedulers.values()]
    pods = [
        _pod(namespace, f"slow-{who}", scheduler, pool, f"slow-{who}")
        for scheduler, who in schedulers.items()
    ]
    args = [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 2}}]
    control_plane.create(nodes)
    control_plane.create(classes)
    control_plane.create(claims)
    upstream = start_kube_scheduler(
        control_plane,
        extra={"profiles": [{"schedulerName": upstream_name, "pluginConfig": args}]},
        name=upstream_name,
    )
    ours = CONFIG.format(max_burst=100) + (
        "profiles:\n- schedulerName: kubesalvo\n  pluginConfig:\n"
        "  - name: VolumeBinding\n    args: {bindTimeoutSeconds: 2}\n"
    )
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, ours, "slow")
    path = f"/api/v1/namespaces/{namespace}/pods"
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    try:
        process.wait_ready()
        control_plane.create(pods)
        deadline = time.monotonic() + 90
        while True:
            found = {
                p["metadata"]["name"]: (pod_scheduled(p) or {}).get("message", "")
                for p in list_objects(control_plane, path)
                if p["metadata"]["name"].startswith("slow-")
            }
            if all("binding volumes" in found.get(f"slow-{w}", "") for w in ("ours", "theirs")):
                break
            assert time.monotonic() < deadline, (found, process.tail())
            time.sleep(1.0)
        assert found["slow-ours"] == found["slow-theirs"]
        assert found["slow-ours"] == (
            'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
        )
        annotated = {
            c["metadata"]["name"]: (c["metadata"].get("annotations") or {}).get(SELECTED_NODE)
            for c in list_objects(control_plane, claims_path)
        }
        assert annotated["slow-ours"] == annotated["slow-theirs"] == host
        assert all(
            not (p.get("spec") or {}).get("nodeName")
            for p in list_objects(control_plane, path)
            if p["metadata"]["name"].startswith("slow-")
        )
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, pods)

        async def clean(client: Any) -> None:
            for claim in claims:
                await client.request("DELETE", f"{claims_path}/{claim['metadata']['name']}")
            await client.request("DELETE", f"/apis/storage.k8s.io/v1/storageclasses/{slow}")
            await client.request("DELETE", f"/api/v1/nodes/{host}")

        control_plane.call(clean)


def test_storage_capacity_too_small_on_some_nodes_keeps_provisioning_off_them(
    control_plane, namespace, tmp_path
):
    """A CSI driver that asks for storage capacity, CSIStorageCapacity objects (written by
    the test, as the driver would) with room for the claim in zone zb only, the roomiest
    node in za: both schedulers select the zb node; a claim too big for every zone stays
    pending with the same text from both."""
    pool = secrets.token_hex(3)
    a, b = f"cap-{pool}-a", f"cap-{pool}-b"
    nodes = [_node(a, pool, "za", "16"), _node(b, pool, "zb", "4")]
    provisioner = f"cap-{pool}.example.com"
    fast = f"cap-{pool}"
    classes = [_class(fast, provisioner)]
    driver = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": provisioner},
        "spec": {"storageCapacity": True, "attachRequired": False},
    }
    capacities = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": f"{pool}-{zone}", "namespace": namespace},
            "storageClassName": fast,
            "nodeTopology": {"matchLabels": {ZONE: zone}},
            "capacity": size,
        }
        for zone, size in (("za", "1Gi"), ("zb", "10Gi"))
    ]
    upstream_name = f"upstream-{pool}"
    schedulers = {"kubesalvo": "ours", upstream_name: "theirs"}
    claims, pods = [], []
    for scheduler, who in schedulers.items():
        for case, size in (("fits", "5Gi"), ("too-big", "50Gi")):
            claims.append(_claim(namespace, f"{case}-{who}", fast, size))
            pods.append(_pod(namespace, f"{case}-{who}", scheduler, pool, f"{case}-{who}"))
    control_plane.create(nodes)
    control_plane.create([*classes, driver, *capacities])
    control_plane.create(claims)
    upstream, process = start_both(control_plane, tmp_path, upstream_name, "cap")
    path = f"/api/v1/namespaces/{namespace}/pods"
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    try:
        process.wait_ready()
        control_plane.create(pods)
        deadline = time.monotonic() + 90
        while True:
            annotated = {
                c["metadata"]["name"]: (c["metadata"].get("annotations") or {}).get(SELECTED_NODE)
                for c in list_objects(control_plane, claims_path)
            }
            found = {
                p["metadata"]["name"]: (pod_scheduled(p) or {}).get("message", "")
                for p in list_objects(control_plane, path)
            }
            if all(annotated.get(f"fits-{w}") for w in ("ours", "theirs")) and all(
                found.get(f"too-big-{w}") for w in ("ours", "theirs")
            ):
                break
            assert time.monotonic() < deadline, (annotated, found, process.tail())
            time.sleep(1.0)
        assert annotated["fits-ours"] == annotated["fits-theirs"] == b
        assert found["too-big-ours"] == found["too-big-theirs"]
        assert "2 node(s) did not have enough free storage" in found["too-big-ours"]
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, pods)

        async def clean(client: Any) -> None:
            for claim in claims:
                await client.request("DELETE", f"{claims_path}/{claim['metadata']['name']}")
            storage = "/apis/storage.k8s.io/v1"
            for obj in capacities:
                name = obj["metadata"]["name"]
                await client.request(
                    "DELETE", f"{storage}/namespaces/{namespace}/csistoragecapacities/{name}"
                )
            await client.request("DELETE", f"{storage}/csidrivers/{provisioner}")
            await client.request("DELETE", f"{storage}/storageclasses/{fast}")
            for node in nodes:
                await client.request("DELETE", f"/api/v1/nodes/{node['metadata']['name']}")

        control_plane.call(clean)
