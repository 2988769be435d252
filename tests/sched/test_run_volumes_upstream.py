"""Pods with volumes sent to kube-scheduler v1.34 and to ``kubesalvo run`` on one control
plane (its kube-controller-manager runs the persistent-volume binder), each scheduler
with its own schedulerName and its own copies of the claims and volumes: the same nodes
chosen, the same PodScheduled=False texts, character for character.

* ``missing``: the claim does not exist (VolumeRestrictions' PreFilter text);
* ``pinned``: the claim is bound to a local volume whose node affinity names node B,
  while node A has the most room;
* ``pinned-full``: the same, but B lacks the cpu (the affinity conflicts are counted);
* ``zoned``: the bound volume (no node affinity) is labelled zone zb;
* ``immediate``: a claim without class that no volume matches stays unbound;
* ``prebound``: the claim names a volume that does not exist, so the PV controller never
  completes the binding (a prebound claim counts as an unbound Immediate one).

The pods of each scheduler go only to this test's three nodes (a node selector), so
nodes left by other tests change both texts alike.
"""

from __future__ import annotations

import re
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

pytestmark = pytest.mark.integration

POOL = "kubesalvo.io/volumes-test"


def _node(name: str, pool: str, zone: str, cpu: str) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {HOSTNAME: name, ZONE: zone, POOL: pool},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def _volume(name: str, claim: tuple[str, str], node: str | None, zone: str | None) -> dict:
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "",
        "claimRef": {"namespace": claim[0], "name": claim[1]},
    }
    if node is not None:
        term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
        spec["local"] = {"path": f"/mnt/{name}"}
    else:
        spec["hostPath"] = {"path": f"/mnt/{name}"}
    labels = {ZONE: zone} if zone else {}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


def _claim(namespace: str, name: str, volume: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
        "storageClassName": "",
    }
    if volume:
        spec["volumeName"] = volume
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def volume_pod(
    namespace: str,
    name: str,
    scheduler: str,
    pool: str,
    volumes: list[dict[str, Any]],
    cpu: str | None = None,
) -> dict[str, Any]:
    """A pause pod for ``scheduler`` on ``pool``'s nodes with ``volumes`` (and a cpu
    request, when given): the pod the volume differential tests send to both."""
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {POOL: pool},
            "containers": [container],
            "volumes": volumes,
        },
    }


def claim_volume(claim: str) -> dict[str, Any]:
    """A pod's volume ``data`` of the claim."""
    return {"name": "data", "persistentVolumeClaim": {"claimName": claim}}


def _pod(namespace: str, name: str, scheduler: str, pool: str, claim: str, cpu: str) -> dict:
    return volume_pod(namespace, name, scheduler, pool, [claim_volume(claim)], cpu)


def start_both(
    control_plane: Any, tmp_path: Any, upstream_name: str, label: str
) -> tuple[Any, SchedulerProcess]:
    """kube-scheduler with one profile, ``upstream_name``, and kubesalvo (scheduler name
    ``kubesalvo``, bursts of up to 100 pods) started on the control plane; the caller
    waits for kubesalvo to be ready and stops both."""
    upstream = start_kube_scheduler(
        control_plane, extra={"profiles": [{"schedulerName": upstream_name}]}, name=upstream_name
    )
    process = SchedulerProcess(
        tmp_path, control_plane.kubeconfig, CONFIG.format(max_burst=100), label
    )
    return upstream, process


def test_pods_with_volumes_get_the_same_nodes_and_texts_from_kubesalvo_and_kube_scheduler(
    control_plane, namespace, tmp_path
):
    pool = secrets.token_hex(3)
    a, b, c = (f"vol-{pool}-{n}" for n in "abc")
    nodes = [_node(a, pool, "za", "8"), _node(b, pool, "zb", "4"), _node(c, pool, "zc", "4")]
    upstream_name = f"upstream-{pool}"
    schedulers = {"kubesalvo": "ours", upstream_name: "theirs"}
    claims: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for scheduler, who in schedulers.items():
        pinned, zoned = f"pinned-{who}", f"zoned-{who}"
        for claim, volume, node, zone in (
            (pinned, f"{pool}-{pinned}", b, None),
            (zoned, f"{pool}-{zoned}", None, "zb"),
        ):
            claims.append(_claim(namespace, claim, volume))
            volumes.append(_volume(volume, (namespace, claim), node, zone))
        claims.append(_claim(namespace, f"immediate-{who}"))
        claims.append(_claim(namespace, f"prebound-{who}", f"{pool}-nowhere"))
        for case, claim, cpu in (
            ("missing", f"missing-{who}", "1"),
            ("pinned", pinned, "1"),
            ("pinned-full", pinned, "5"),
            ("zoned", zoned, "1"),
            ("immediate", f"immediate-{who}", "1"),
            ("prebound", f"prebound-{who}", "1"),
        ):
            pods.append(_pod(namespace, f"{case}-{who}", scheduler, pool, claim, cpu))
    control_plane.create(nodes)
    control_plane.create(volumes)
    control_plane.create(claims)
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"

    def bound_claims() -> set[str]:
        return {
            c["metadata"]["name"]
            for c in list_objects(control_plane, claims_path)
            if (c.get("status") or {}).get("phase") == "Bound"
        }

    # The PV controller binds the prebound pairs (the bind-completed annotation).
    wanted = {f"{kind}-{who}" for kind in ("pinned", "zoned") for who in schedulers.values()}
    deadline = time.monotonic() + 60
    while not wanted <= (found := bound_claims()):
        assert time.monotonic() < deadline, f"claims bound so far: {found}"
        time.sleep(0.5)
    upstream, process = start_both(control_plane, tmp_path, upstream_name, "vol")
    try:
        process.wait_ready()
        control_plane.create(pods)
        path = f"/api/v1/namespaces/{namespace}/pods"

        deadline = time.monotonic() + 120
        while len(seen := pod_outcomes(control_plane, path)) < len(pods):
            assert time.monotonic() < deadline, f"outcomes so far: {seen}\n{process.tail()}"
            time.sleep(1.0)
        cases = {p["metadata"]["name"].rsplit("-", 1)[0] for p in pods}
        for case in sorted(cases):
            # Each scheduler's claims and volumes carry its suffix; the rest is equal.
            theirs = seen[f"{case}-theirs"].replace("-theirs", "-ours")
            assert seen[f"{case}-ours"] == theirs, case
        assert seen["pinned-ours"] == f"on {b}" and seen["zoned-ours"] == f"on {b}"
        assert 'persistentvolumeclaim "missing-ours" not found' in seen["missing-ours"]
        # NodeResourcesFit runs before VolumeBinding: a node failing both counts for cpu.
        # (Entries sort by text, and other tests' nodes on the shared control plane add
        # entries of their own between these two: each is checked as an entry.)
        entries = re.split(r"[:,.] ", seen["pinned-full-ours"])
        assert "1 node(s) didn't match PersistentVolume's node affinity" in entries
        assert "2 Insufficient cpu" in entries
        assert "pod has unbound immediate PersistentVolumeClaims" in seen["immediate-ours"]
        assert "pod has unbound immediate PersistentVolumeClaims" in seen["prebound-ours"]
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, pods)

        control_plane.delete([*claims, *nodes, *volumes])


def test_a_read_write_once_pod_claim_in_use_gets_the_same_text_from_both(
    control_plane, namespace, tmp_path
):
    """A second pod of a ReadWriteOncePod claim a running pod holds stays pending with
    kube-scheduler's text (and its preemption text: the holder has the same priority)."""
    pool = secrets.token_hex(3)
    nodes = [_node(f"rwop-{pool}-{n}", pool, "za", "4") for n in "ab"]
    upstream_name = f"upstream-{pool}"
    schedulers = {"kubesalvo": "ours", upstream_name: "theirs"}
    claims, volumes, holders, seconds = [], [], [], []
    for scheduler, who in schedulers.items():
        name = f"once-{who}"
        claim = _claim(namespace, name, f"{pool}-{name}")
        claim["spec"]["accessModes"] = ["ReadWriteOncePod"]
        volume = _volume(f"{pool}-{name}", (namespace, name), None, None)
        volume["spec"]["accessModes"] = ["ReadWriteOncePod"]
        claims.append(claim)
        volumes.append(volume)
        holders.append(_pod(namespace, f"holder-{who}", scheduler, pool, name, "1"))
        seconds.append(_pod(namespace, f"second-{who}", scheduler, pool, name, "1"))
    control_plane.create(nodes)
    control_plane.create(volumes)
    control_plane.create(claims)
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    deadline = time.monotonic() + 60
    while not all(
        (c.get("status") or {}).get("phase") == "Bound"
        for c in list_objects(control_plane, claims_path)
        if c["metadata"]["name"].startswith("once-")
    ):
        assert time.monotonic() < deadline, "claims never bound"
        time.sleep(0.5)
    upstream, process = start_both(control_plane, tmp_path, upstream_name, "rwop")
    path = f"/api/v1/namespaces/{namespace}/pods"

    def state() -> dict[str, str]:
        return pod_outcomes(control_plane, path)

    try:
        process.wait_ready()
        control_plane.create(holders)
        deadline = time.monotonic() + 60
        while not all(state().get(f"holder-{w}", "").startswith("on ") for w in ("ours", "theirs")):
            assert time.monotonic() < deadline, f"holders: {state()}\n{process.tail()}"
            time.sleep(0.5)
        control_plane.create(seconds)
        deadline = time.monotonic() + 60
        while not all(f"second-{w}" in (seen := state()) for w in ("ours", "theirs")):
            assert time.monotonic() < deadline, f"outcomes: {state()}\n{process.tail()}"
            time.sleep(0.5)
        assert seen["second-ours"] == seen["second-theirs"]
        assert "ReadWriteOncePod access mode already in-use" in seen["second-ours"]
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, holders + seconds)

        control_plane.delete([*claims, *nodes, *volumes])


def test_csi_volume_limits_keep_a_pod_off_a_node_that_allows_one_volume(
    control_plane, namespace, tmp_path
):
    """A pod with two volumes of a CSI driver that node A's CSINode allows once (A has
    the most room) goes to B, which allows two; a third pod with two more volumes fits
    nowhere; the same nodes and text from kubesalvo and kube-scheduler (the test writes
    the CSINodes, as a kubelet would)."""
    pool = secrets.token_hex(3)
    a, b = (f"csi-{pool}-{n}" for n in "ab")
    nodes = [_node(a, pool, "za", "8"), _node(b, pool, "za", "4")]
    upstream_name = f"upstream-{pool}"
    schedulers = {"kubesalvo": "ours", upstream_name: "theirs"}
    # A driver per scheduler, so that neither's volumes count against the other's.
    drivers = {who: f"csi-{pool}-{who}.example.com" for who in schedulers.values()}
    csi_nodes = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": name},
            "spec": {
                "drivers": [
                    {"name": driver, "nodeID": name, "allocatable": {"count": n}}
                    for driver in drivers.values()
                ]
            },
        }
        for name, n in ((a, 1), (b, 2))
    ]
    claims, volumes, pods = [], [], []
    for scheduler, who in schedulers.items():
        driver = drivers[who]
        for p in ("two", "more"):
            names_ = []
            for k in range(2):
                name = f"{p}-{who}-{k}"
                volume = _volume(f"{pool}-{name}", (namespace, name), None, None)
                del volume["spec"]["hostPath"]
                volume["spec"]["csi"] = {"driver": driver, "volumeHandle": f"{pool}-{name}"}
                volumes.append(volume)
                claims.append(_claim(namespace, name, f"{pool}-{name}"))
                names_.append(name)
            pod = _pod(namespace, f"{p}-{who}", scheduler, pool, names_[0], "1")
            pod["spec"]["volumes"].append(
                {"name": "more", "persistentVolumeClaim": {"claimName": names_[1]}}
            )
            pods.append(pod)
    control_plane.create(nodes)
    control_plane.create(csi_nodes)
    control_plane.create(volumes)
    control_plane.create(claims)
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    deadline = time.monotonic() + 60
    while not all(
        (c.get("status") or {}).get("phase") == "Bound"
        for c in list_objects(control_plane, claims_path)
        if c["metadata"]["name"].startswith(("two-", "more-"))
    ):
        assert time.monotonic() < deadline, "claims never bound"
        time.sleep(0.5)
    upstream, process = start_both(control_plane, tmp_path, upstream_name, "csi")
    path = f"/api/v1/namespaces/{namespace}/pods"

    def state() -> dict[str, str]:
        return pod_outcomes(control_plane, path)

    try:
        process.wait_ready()
        control_plane.create([p for p in pods if p["metadata"]["name"].startswith("two-")])
        deadline = time.monotonic() + 60
        while not all(f"two-{w}" in state() for w in ("ours", "theirs")):
            assert time.monotonic() < deadline, f"outcomes: {state()}\n{process.tail()}"
            time.sleep(0.5)
        control_plane.create([p for p in pods if p["metadata"]["name"].startswith("more-")])
        deadline = time.monotonic() + 60
        while not all(f"more-{w}" in (seen := state()) for w in ("ours", "theirs")):
            assert time.monotonic() < deadline, f"outcomes: {state()}\n{process.tail()}"
            time.sleep(0.5)
        assert seen["two-ours"] == seen["two-theirs"] == f"on {b}", seen
        assert seen["more-ours"] == seen["more-theirs"]
        assert "2 node(s) exceed max volume count" in seen["more-ours"]
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, pods)

        async def clean(client: Any) -> None:
            for claim in claims:
                await client.request("DELETE", f"{claims_path}/{claim['metadata']['name']}")
            for volume in volumes:
                name = volume["metadata"]["name"]
                await client.request("DELETE", f"/api/v1/persistentvolumes/{name}")
            for name in (a, b):
                await client.request("DELETE", f"/apis/storage.k8s.io/v1/csinodes/{name}")
                await client.request("DELETE", f"/api/v1/nodes/{name}")

        control_plane.call(clean)


def test_a_pod_waiting_for_its_claim_is_scheduled_once_the_claim_appears(
    control_plane, namespace, tmp_path
):
    """The claim's creation is a cluster event that wakes the pod VolumeRestrictions
    rejected (kube-scheduler's queue does the same), long before the five minutes after
    which every parked pod is retried anyway."""
    pool = secrets.token_hex(3)
    nodes = [_node(f"late-{pool}", pool, "za", "4")]
    control_plane.create(nodes)
    process = SchedulerProcess(
        tmp_path, control_plane.kubeconfig, CONFIG.format(max_burst=100), "late"
    )
    path = f"/api/v1/namespaces/{namespace}/pods"
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    volume = _volume(f"{pool}-late", (namespace, "late"), None, None)
    pod = _pod(namespace, "late", "kubesalvo", pool, "late", "1")
    try:
        process.wait_ready()
        control_plane.create([pod])
        deadline = time.monotonic() + 30
        while (pod_scheduled(_get(control_plane, path, "late")) or {}).get("status") != "False":
            assert time.monotonic() < deadline, process.tail()
            time.sleep(0.5)
        control_plane.create([volume, _claim(namespace, "late", f"{pool}-late")])
        deadline = time.monotonic() + 30
        while not (_get(control_plane, path, "late").get("spec") or {}).get("nodeName"):
            assert time.monotonic() < deadline, process.tail()
            time.sleep(0.5)
    finally:
        process.kill()
        delete_pods(control_plane, [pod])

        async def clean(client: Any) -> None:
            await client.request("DELETE", f"{claims_path}/late")
            await client.request("DELETE", f"/api/v1/persistentvolumes/{pool}-late")
            await client.request("DELETE", f"/api/v1/nodes/late-{pool}")

        control_plane.call(clean)


def _get(control_plane: Any, path: str, name: str) -> dict[str, Any]:
    return next((p for p in list_objects(control_plane, path) if p["metadata"]["name"] == name), {})
