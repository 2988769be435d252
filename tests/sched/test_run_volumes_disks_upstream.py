"""VolumeRestrictions' in-tree disk conflicts with kube-scheduler v1.34 and ``kubesalvo
run`` on one control plane, each scheduler with its own schedulerName and disks (an
in-tree volume in a pod spec needs no driver to be scheduled). Pods holding the disks
are put on nodes by nodeName; node C has the most room, B the next:

* ``gce-ro``: a GCE PD that C's holder mounts read-only, mounted read-only: C;
* ``gce-rw``: the same PD read-write: C conflicts, B;
* ``ebs``: an EBS volume C's holder has, even read-only: B;
* ``iscsi``: an iSCSI disk a holder on every node mounts read-write: pending, with the
  same text from both.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest

from kubesalvo.sched.cluster import start_kube_scheduler
from tests.sched.test_app import CONFIG, SchedulerProcess, delete_pods, list_objects, pod_scheduled
from tests.sched.test_run_volumes_upstream import POOL, _node

pytestmark = pytest.mark.integration


def _pod(
    namespace: str, name: str, scheduler: str, pool: str, disks: list[dict], node: str = ""
) -> dict[str, Any]:
    requests = {"cpu": "1"}  # cpu alone: every score falls with the node's cpu share
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "nodeSelector": {POOL: pool},
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": requests},
            }
        ],
        "volumes": [{"name": f"d{i}", **disk} for i, disk in enumerate(disks)],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def test_in_tree_disk_conflicts_give_the_same_nodes_and_texts_from_both(
    control_plane, namespace, tmp_path
):
    pool = secrets.token_hex(3)
    a, b, c = (f"disk-{pool}-{x}" for x in "abc")
    # Far apart, so that no two nodes tie for any pod (ties are drawn at random).
    nodes = [_node(a, pool, "za", "4"), _node(b, pool, "za", "16"), _node(c, pool, "za", "64")]
    upstream_name = f"upstream-{pool}"
    schedulers = {"kubesalvo": "ours", upstream_name: "theirs"}
    holders, pods = [], []
    for scheduler, who in schedulers.items():
        pd = {"pdName": f"pd-{pool}-{who}", "fsType": "ext4"}
        ebs = {"volumeID": f"vol-{pool}-{who}", "fsType": "ext4"}
        iscsi = {"targetPortal": "10.0.0.1:3260", "iqn": f"iqn.2026-11.io.example:{who}", "lun": 0}
        holders.append(
            _pod(
                namespace,
                f"holder-c-{who}",
                scheduler,
                pool,
                [
                    {"gcePersistentDisk": {**pd, "readOnly": True}},
                    {"awsElasticBlockStore": {**ebs, "readOnly": True}},
                ],
                node=c,
            )
        )
        for n in (a, b, c):
            holders.append(
                _pod(
                    namespace, f"holder-{n[-1]}-iscsi-{who}", scheduler, pool, [{"iscsi": iscsi}], n
                )
            )
        pods.append(
            _pod(
                namespace,
                f"gce-ro-{who}",
                scheduler,
                pool,
                [{"gcePersistentDisk": {**pd, "readOnly": True}}],
            )
        )
        pods.append(_pod(namespace, f"gce-rw-{who}", scheduler, pool, [{"gcePersistentDisk": pd}]))
        pods.append(
            _pod(
                namespace,
                f"ebs-{who}",
                scheduler,
                pool,
                [{"awsElasticBlockStore": {**ebs, "readOnly": True}}],
            )
        )
        pods.append(_pod(namespace, f"iscsi-{who}", scheduler, pool, [{"iscsi": iscsi}]))
    control_plane.create(nodes)
    control_plane.create(holders)
    upstream = start_kube_scheduler(
        control_plane, extra={"profiles": [{"schedulerName": upstream_name}]}, name=upstream_name
    )
    process = SchedulerProcess(
        tmp_path, control_plane.kubeconfig, CONFIG.format(max_burst=100), "disks"
    )
    try:
        process.wait_ready()
        control_plane.create(pods)
        path = f"/api/v1/namespaces/{namespace}/pods"
        wanted = {p["metadata"]["name"] for p in pods}
        deadline = time.monotonic() + 120
        while True:
            seen = {}
            for pod in list_objects(control_plane, path):
                name = pod["metadata"]["name"]
                condition = pod_scheduled(pod) or {}
                if name not in wanted:
                    continue
                if (pod.get("spec") or {}).get("nodeName"):
                    seen[name] = "on " + pod["spec"]["nodeName"]
                elif condition.get("status") == "False":
                    seen[name] = condition["message"]
            if len(seen) == len(wanted):
                break
            assert time.monotonic() < deadline, f"outcomes so far: {seen}\n{process.tail()}"
            time.sleep(1.0)
        for case in ("gce-ro", "gce-rw", "ebs", "iscsi"):
            ours, theirs = seen[f"{case}-ours"], seen[f"{case}-theirs"]
            assert ours == theirs.replace("-theirs", "-ours"), (case, ours, theirs)
        assert seen["gce-ro-ours"] == f"on {c}"
        assert seen["gce-rw-ours"] == seen["ebs-ours"] == f"on {b}"
        assert "3 node(s) had no available disk" in seen["iscsi-ours"]
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, [*pods, *holders])
        control_plane.delete(nodes)
