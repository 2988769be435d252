"""A ReadWriteOncePod conflict resolved by preemption, as kube-scheduler resolves it.

VolumeRestrictions fails every node for a pod whose ReadWriteOncePod claim another pod
uses, with a resolvable code; in DefaultPreemption's dry run, removing the holder from its
node removes the conflict there, and only there. So a higher-priority pod of the claim
evicts the holder, is nominated to the holder's node and binds there, with kube-scheduler
v1.34 and with ``kubesalvo run`` alike (each with its own schedulerName, its own claim,
volume, nodes and pods); a pod of the same priority as the holder evicts nothing and keeps
kube-scheduler's text.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import pytest

from kubesalvo.sched.cluster import start_kube_scheduler
from tests.sched.test_app import (
    CONFIG,
    SchedulerProcess,
    delete_pods,
    list_objects,
    pod_outcomes,
)
from tests.sched.test_run_volumes_upstream import _claim, _node, _pod, _volume

pytestmark = pytest.mark.integration

SIDES = ("ours", "theirs")


def _read_write_once_pod(item: dict[str, Any]) -> dict[str, Any]:
    item["spec"]["accessModes"] = ["ReadWriteOncePod"]
    return item


def _priority(pod: dict[str, Any], priority_class: str) -> dict[str, Any]:
    pod["spec"]["priorityClassName"] = priority_class
    return pod


def test_a_higher_priority_pod_of_a_read_write_once_pod_claim_evicts_its_holder(
    control_plane, namespace, tmp_path
):
    token = secrets.token_hex(3)
    names = {"ours": f"rwop-ours-{token}", "theirs": f"rwop-theirs-{token}"}
    low, high = f"rwop-low-{token}", f"rwop-high-{token}"
    classes = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": name}, "value": value}
        for name, value in ((low, 10), (high, 1000))
    ]  # fmt: skip
    pools = {side: f"{token}-{side}" for side in SIDES}
    nodes = [_node(f"rwop-{pools[s]}-{n}", pools[s], "za", "4") for s in SIDES for n in "ab"]
    claims = [
        _read_write_once_pod(_claim(namespace, f"once-{s}", f"once-{token}-{s}")) for s in SIDES
    ]
    volumes = [
        _read_write_once_pod(_volume(f"once-{token}-{s}", (namespace, f"once-{s}"), None, None))
        for s in SIDES
    ]

    def pod(side: str, role: str, priority_class: str) -> dict[str, Any]:
        made = _pod(namespace, f"{role}-{side}", names[side], pools[side], f"once-{side}", "1")
        return _priority(made, priority_class)

    holders = [pod(side, "holder", low) for side in SIDES]
    peers = [pod(side, "peer", low) for side in SIDES]
    urgent = [pod(side, "urgent", high) for side in SIDES]
    control_plane.create(classes)
    control_plane.create(nodes)
    control_plane.create(volumes)
    control_plane.create(claims)
    claims_path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    pods_path = f"/api/v1/namespaces/{namespace}/pods"

    def wait(what: str, done, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"{what}: {state()}"
            time.sleep(0.5)

    def state() -> dict[str, str]:
        return pod_outcomes(control_plane, pods_path)

    wait(
        "claims bound",
        lambda: all(
            (c.get("status") or {}).get("phase") == "Bound"
            for c in list_objects(control_plane, claims_path)
            if c["metadata"]["name"] in ("once-ours", "once-theirs")
        ),
    )
    upstream = start_kube_scheduler(
        control_plane,
        extra={"profiles": [{"schedulerName": names["theirs"]}]},
        name=names["theirs"],
    )
    config = CONFIG.format(max_burst=100) + f"profiles:\n- schedulerName: {names['ours']}\n"
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "rwop-preemption")
    try:
        process.wait_ready()
        control_plane.create(holders)
        wait(
            "holders bound",
            lambda: all(state().get(f"holder-{s}", "").startswith("on ") for s in SIDES),
        )
        held = {side: state()[f"holder-{side}"].removeprefix("on ") for side in SIDES}
        # A higher-priority pod: the holder is evicted, the pod binds on the holder's node.
        control_plane.create(urgent)
        wait(
            "holders evicted and urgent pods bound on their nodes",
            lambda: all(
                f"holder-{s}" not in (now := state()) and now.get(f"urgent-{s}") == f"on {held[s]}"
                for s in SIDES
            ),
            timeout=180,
        )
        # A lower-priority pod of the claim now: nothing it may evict, upstream's text.
        control_plane.create(peers)
        wait("peers reported", lambda: all(f"peer-{s}" in state() for s in SIDES))
        seen = state()
        assert seen["peer-ours"] == seen["peer-theirs"], seen
        assert "ReadWriteOncePod access mode already in-use" in seen["peer-ours"]
    finally:
        process.kill()
        upstream.stop()
        delete_pods(control_plane, holders + peers + urgent)
        control_plane.delete([*claims, *volumes, *nodes, *classes])
