"""Pods with in-tree disks (GCE PD, AWS EBS, iSCSI, RBD) sent to kube-scheduler v1.34 and
to ``kubesalvo run`` on one control plane: VolumeRestrictions' disk conflicts give the
same nodes and the same PodScheduled=False text from both.

Pods holding the disks are bound to the two nodes by name (kwok runs them); each
scheduler then places pods whose disks conflict with the holders' or not, under
upstream's read-only rules. Each scheduler's disks carry its own suffix, so neither's
pods conflict with the other's. In-tree volumes need no driver to be scheduled.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest

from tests.helpers.volumes import HOSTNAME
from tests.sched.test_app import (
    delete_pods,
    list_objects,
    pod_outcomes,
)
from tests.sched.test_run_volumes_upstream import _node, start_both, volume_pod

pytestmark = pytest.mark.integration


def _pod(namespace: str, name: str, scheduler: str, pool: str, volumes: list[dict]) -> dict:
    return volume_pod(namespace, name, scheduler, pool, volumes, "100m")


def _disks(tag: str) -> dict[str, Any]:
    """Builders of one scheduler's disks by kind: (read_only) -> a volume."""
    return {
        "gce": lambda ro, pd="x": {
            "name": f"gce-{pd}",
            "gcePersistentDisk": {"pdName": f"{tag}-{pd}", "readOnly": ro},
        },
        "ebs": lambda ro: {
            "name": "ebs",
            "awsElasticBlockStore": {"volumeID": f"vol-{tag}", "readOnly": ro},
        },
        "iscsi": lambda ro: {
            "name": "iscsi",
            "iscsi": {
                "targetPortal": "127.0.0.1:3260",
                "iqn": f"iqn.2026-01.io.kubesalvo:{tag}",
                "lun": 0,
                "readOnly": ro,
            },
        },
        "rbd": lambda ro, monitors=("m1", "m2"): {
            "name": "rbd",
            "rbd": {"monitors": list(monitors), "image": f"img-{tag}", "readOnly": ro},
        },
    }


def test_in_tree_disk_conflicts_give_the_same_nodes_and_texts_from_both(
    control_plane, namespace, tmp_path
):
    pool = secrets.token_hex(3)
    a, b = (f"disk-{pool}-{n}" for n in "ab")
    # A has the most room: a pod goes there unless its disk conflicts with A's holder.
    nodes = [_node(a, pool, "za", "8"), _node(b, pool, "za", "4")]
    upstream_name = f"upstream-{pool}"
    schedulers = {"kubesalvo": "ours", upstream_name: "theirs"}
    holders, probes, pods = [], [], []
    for scheduler, who in schedulers.items():
        for node in (a, b):
            probe = _pod(namespace, f"probe-{node[-1]}-{who}", scheduler, pool, [])
            probe["spec"]["nodeSelector"][HOSTNAME] = node
            probes.append(probe)
        d = _disks(f"{pool}-{who}")
        on_a = [d["gce"](True), d["gce"](False, "y"), d["gce"](False, "z")]
        on_a += [d["ebs"](True), d["iscsi"](False), d["rbd"](True)]
        for node, volumes in ((a, on_a), (b, [d["gce"](False, "z")])):
            holder = _pod(namespace, f"holder-{node[-1]}-{who}", scheduler, pool, volumes)
            holder["spec"]["nodeName"] = node
            holders.append(holder)
        for case, volume in (
            ("gce-readers", d["gce"](True)),  # both read-only: no conflict
            ("gce-writer", d["gce"](True, "y")),  # A's holder writes y
            ("ebs", d["ebs"](True)),  # EBS conflicts even read-only
            ("iscsi", d["iscsi"](True)),  # A's holder writes the target
            ("rbd", d["rbd"](False, ("m2", "m3"))),  # a monitor in common, one writer
            ("rbd-apart", d["rbd"](False, ("m4",))),  # no monitor in common
            ("nowhere", d["gce"](False, "z")),  # both nodes write z
        ):
            pods.append(_pod(namespace, f"{case}-{who}", scheduler, pool, [volume]))
    control_plane.create(nodes)
    upstream, process = start_both(control_plane, tmp_path, upstream_name, "disks")
    path = f"/api/v1/namespaces/{namespace}/pods"

    def outcomes() -> dict[str, str]:
        return pod_outcomes(control_plane, path)

    def ready(node: dict[str, Any]) -> bool:
        conditions = (node.get("status") or {}).get("conditions") or ()
        ok = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        return ok and not (node.get("spec") or {}).get("taints")

    try:
        process.wait_ready()
        # kwok marks the nodes Ready; until then the node controller may taint them, and
        # a scheduler that saw a taint would choose otherwise.
        deadline = time.monotonic() + 60
        while not all(
            ready(n)
            for n in list_objects(control_plane, "/api/v1/nodes")
            if n["metadata"]["name"] in (a, b)
        ):
            assert time.monotonic() < deadline, "nodes never ready"
            time.sleep(0.5)
        # Ready in the API server is not yet ready in each scheduler's cache: on a loaded
        # machine kube-scheduler has placed a pod while it still saw A's not-ready taint.
        # A probe pinned to each node, per scheduler, binds only once that scheduler sees
        # the node untainted; the probes load A and B alike, so A keeps the most room.
        control_plane.create(probes)
        deadline = time.monotonic() + 120
        while len(bound := [v for v in outcomes().values() if v.startswith("on ")]) < 4:
            assert time.monotonic() < deadline, f"probes bound: {bound}\n{process.tail()}"
            time.sleep(0.5)
        control_plane.create(holders)
        control_plane.create(pods)
        deadline = time.monotonic() + 120
        while len(seen := outcomes()) < len(probes) + len(holders) + len(pods):
            assert time.monotonic() < deadline, f"outcomes so far: {seen}\n{process.tail()}"
            time.sleep(1.0)
        cases = {p["metadata"]["name"].rsplit("-", 1)[0] for p in pods}
        for case in sorted(cases):
            assert seen[f"{case}-ours"] == seen[f"{case}-theirs"], (case, seen)
        assert seen["gce-readers-ours"] == seen["rbd-apart-ours"] == f"on {a}", seen
        for case in ("gce-writer", "ebs", "iscsi", "rbd"):
            assert seen[f"{case}-ours"] == f"on {b}", (case, seen)
        assert "2 node(s) had no available disk" in seen["nowhere-ours"]
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, probes + holders + pods)
        control_plane.delete(nodes)
