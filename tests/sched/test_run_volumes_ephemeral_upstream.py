"""Generic ephemeral volumes with kube-scheduler v1.34 and ``kubesalvo run`` on one control
plane, whose kube-controller-manager runs the ephemeral-volume controller (it makes the
claim ``<pod>-<volume>``, owned by the pod) and the PV binder; each scheduler with its own
schedulerName, class and volumes:

* ``eph``: a pod whose ephemeral volume asks for a WaitForFirstConsumer class with one
  local volume, on node A; nodes B and C have more room: the pod goes to A and the
  controller's claim ends bound to A's volume;
* ``squat``: a claim of the name the pod's volume would get exists already and is not
  the pod's: the pod stays pending with the same text from both.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest

from tests.sched.test_app import (
    delete_pods,
    list_objects,
    pod_outcomes,
)
from tests.sched.test_run_volumes_delayed_upstream import _claim, _class, _volume
from tests.sched.test_run_volumes_upstream import _node, start_both, volume_pod

pytestmark = pytest.mark.integration


def _pod(namespace: str, name: str, scheduler: str, pool: str, class_name: str) -> dict:
    template: dict[str, Any] = {
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": class_name,
        }
    }
    volume = {"name": "data", "ephemeral": {"volumeClaimTemplate": template}}
    return volume_pod(namespace, name, scheduler, pool, [volume])


def test_ephemeral_volumes_get_the_same_nodes_claims_and_texts_from_both(
    control_plane, namespace, tmp_path
):
    pool = secrets.token_hex(3)
    a, b, c = (f"eph-{pool}-{x}" for x in "abc")
    nodes = [_node(a, pool, "za", "4"), _node(b, pool, "za", "8"), _node(c, pool, "za", "16")]
    upstream_name = f"upstream-{pool}"
    schedulers = {"kubesalvo": "ours", upstream_name: "theirs"}
    classes, volumes, claims, pods = [], [], [], []
    for scheduler, who in schedulers.items():
        local = f"eph-{pool}-{who}"
        classes.append(_class(local, "kubernetes.io/no-provisioner"))
        volumes.append(_volume(f"{pool}-a-{who}", local, a, "10Gi"))
        pods.append(_pod(namespace, f"eph-{who}", scheduler, pool, local))
        pods.append(_pod(namespace, f"squat-{who}", scheduler, pool, local))
        # not made by the controller for the pod: no owner reference
        claims.append(_claim(namespace, f"squat-{who}-data", local, "1Gi"))
    control_plane.create(nodes)
    control_plane.create(classes)
    control_plane.create(volumes)
    control_plane.create(claims)
    deadline = time.monotonic() + 60
    while not all(
        (v.get("status") or {}).get("phase") == "Available"
        for v in list_objects(control_plane, "/api/v1/persistentvolumes")
        if v["metadata"]["name"].startswith(pool)
    ):
        assert time.monotonic() < deadline, "volumes never became Available"
        time.sleep(0.5)
    upstream, process = start_both(control_plane, tmp_path, upstream_name, "eph")
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    try:
        process.wait_ready()
        control_plane.create(pods)
        path = f"/api/v1/namespaces/{namespace}/pods"
        deadline = time.monotonic() + 120
        while True:
            seen = pod_outcomes(control_plane, path)
            placed = all(seen.get(f"eph-{who}", "").startswith("on ") for who in ("ours", "theirs"))
            squats = [seen.get(f"squat-{who}", "") for who in ("ours", "theirs")]
            if placed and all("not owner" in s for s in squats):
                break
            assert time.monotonic() < deadline, f"outcomes so far: {seen}\n{process.tail()}"
            time.sleep(1.0)
        made = {c["metadata"]["name"]: c for c in list_objects(control_plane, claims_path)}
        for who in ("ours", "theirs"):
            assert seen[f"eph-{who}"] == f"on {a}", seen
            claim = made[f"eph-{who}-data"]
            owners = claim["metadata"].get("ownerReferences") or []
            assert [o["name"] for o in owners] == [f"eph-{who}"]
            assert claim["spec"].get("volumeName") == f"{pool}-a-{who}"
        ours, theirs = seen["squat-ours"], seen["squat-theirs"]
        assert ours == theirs.replace("-theirs", "-ours"), (ours, theirs)
        assert (
            f"PVC {namespace}/squat-ours-data was not created for pod "
            f"{namespace}/squat-ours (pod is not owner)"
        ) in ours
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, pods)
        control_plane.delete([*claims, *classes, *nodes, *volumes])
