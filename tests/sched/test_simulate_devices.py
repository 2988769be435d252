"""``kubesalvo simulate --snapshot`` with DynamicResources' objects: pods with device claims
get devices published for their node, never one device twice, a shared claim is used on
its node, and the pods that find no device stay pending with the scheduler's text, as the
live scheduler would place them. The placed snapshot carries the allocations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubesalvo.core.profile import Profile
from kubesalvo.core.snapshot import dumps, from_objects, loads
from kubesalvo.sched.simulate.run import placed_snapshot, simulate
from tests.helpers import devices as dra

DRIVER = dra.Driver("gpu.example.com", gpus=4)
GPU = DRIVER.device_class("gpu")
GPU_CLASS = GPU["metadata"]["name"]


def node(name: str) -> dict[str, Any]:
    allocatable = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def claim(name: str, gpus: int, uid: str) -> dict[str, Any]:
    made = dra.claim("ns", name, dra.claim_spec(dra.request("gpu", GPU_CLASS, gpus)))
    made["metadata"]["uid"] = uid
    return made


def pod(name: str, *claims: str) -> dict[str, Any]:
    entries = [{"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)]
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {
            "resourceClaims": entries,
            "containers": [
                {
                    "name": "c",
                    "resources": {
                        "requests": {"cpu": "100m"},
                        "claims": [{"name": e["name"]} for e in entries],
                    },
                }
            ],
        },
    }


def recorded() -> Any:
    """Three nodes, GPUs published on two of them (4 each); two pods sharing one claim of
    1 GPU, then five pods asking for 2 GPUs each (room for three once the shared claim
    has its GPU), and one pod whose claim does not exist, in that queue order."""
    slices = [DRIVER.slice("n1", "a100"), DRIVER.slice("n2", "h100")]
    claims = [claim(f"two-{i}", 2, f"c{i}") for i in range(5)]
    claims.append(claim("shared", 1, "cs"))
    pods = [pod("share-a", "shared"), pod("share-b", "shared")]
    pods += [pod(f"p{i}", f"two-{i}") for i in range(5)]
    pods.append(pod("lost", "absent"))
    devices = {"deviceclasses": [GPU], "resourceclaims": claims, "resourceslices": slices}
    nodes = [node("n1"), node("n2"), node("n3")]
    return loads(dumps(from_objects(nodes, pods, devices=devices))), slices, nodes


def _where(summary: Any) -> dict[str, str | None]:
    return {
        p["metadata"]["name"]: n for p, n in zip(summary.burst, summary.result.nodes, strict=True)
    }


def test_claims_get_devices_of_their_node_and_never_one_twice():
    snapshot, slices, nodes = recorded()
    summary = simulate(snapshot, Profile.default(), seed=7)
    where = _where(summary)
    # 8 GPUs: the shared claim's 1, then three pods of 2 (one GPU is left, too few for a
    # fourth): two pods of 2 wait.
    two = [name for name in where if name.startswith("p")]
    assert sum(where[name] is not None for name in two) == 3
    assert where["share-a"] is not None and where["share-a"] == where["share-b"]
    assert where["lost"] is None
    assert summary.messages == [
        ("0/3 nodes are available: 3 cannot allocate all claims.", 2),
        ('0/3 nodes are available: resourceclaim.resource.k8s.io "absent" not found.', 1),
    ]
    # The placed snapshot: pods on their nodes, claims allocated and reserved for them,
    # checked without the scheduler's code.
    placed = placed_snapshot(snapshot, summary)
    claims = {c["metadata"]["name"]: c for c in placed.devices["resourceclaims"]}
    bound = [p for p in placed.pods if p["spec"].get("nodeName")]
    assert len(bound) == 5
    by_name = {n["metadata"]["name"]: n for n in nodes}
    assert dra.check_allocations(bound, claims, slices, by_name) == []
    assert len(claims["shared"]["status"]["reservedFor"]) == 2
    # The snapshot as read is left as it was.
    assert all(not c.get("status") for c in snapshot.devices["resourceclaims"])


def test_without_device_objects_a_pod_with_claims_stays_pending_and_the_rest_are_placed():
    snapshot, _, _ = recorded()
    snapshot.devices = {}
    snapshot.pods.append({**pod("plain"), "spec": {"containers": [{"name": "c"}]}})
    summary = simulate(snapshot, Profile.default())
    where = _where(summary)
    assert where["plain"] is not None
    assert [name for name, n in where.items() if n is not None] == ["plain"]
    assert summary.messages[0] == (
        '0/3 nodes are available: resourceclaim.resource.k8s.io "shared" not found.',
        2,
    )
    assert all(text.endswith(" not found.") for text, _ in summary.messages)


def _replay(snapshot: Any, tmp_path: Path) -> tuple[Any, Path, Path]:
    """``kubesalvo simulate --snapshot F --json --save-placed OUT`` on ``snapshot``: its
    report, OUT and F."""
    path, out = tmp_path / "cluster.snapshot", tmp_path / "placed.snapshot"
    path.write_bytes(dumps(snapshot))
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "simulate", "--snapshot", str(path),
         "--json", "--save-placed", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), out, path


def test_the_command_replays_a_snapshot_with_devices_and_saves_the_allocations(
    tmp_path: Path,
):
    snapshot, slices, nodes = recorded()
    report, out, _ = _replay(snapshot, tmp_path)
    assert report["pods"] == 8 and report["placed"] == 5
    placed = loads(out.read_bytes())
    claims = {c["metadata"]["name"]: c for c in placed.devices["resourceclaims"]}
    bound = [p for p in placed.pods if p["spec"].get("nodeName")]
    by_name = {n["metadata"]["name"]: n for n in nodes}
    assert len(bound) == 5
    assert dra.check_allocations(bound, claims, slices, by_name) == []


def test_a_snapshot_without_device_kinds_is_warned_about_by_what_it_changes(tmp_path: Path):
    snapshot, _, _ = recorded()
    snapshot.devices = {}
    snapshot.omitted = ["replicasets", "deviceclasses", "resourceclaims", "resourceslices"]
    path = tmp_path / "partial.snapshot"
    path.write_bytes(dumps(snapshot))
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "simulate", "--snapshot", str(path),
         "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 2
    assert "lacks replicasets" in warnings[0] and "default topology spreading" in warnings[0]
    assert "lacks deviceclasses, resourceclaims, resourceslices" in warnings[1]
    assert "pods with device claims are placed without those objects" in warnings[1]


def templated(name: str, template_name: str) -> dict[str, Any]:
    made = pod(name)
    made["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template_name}]
    made["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return made


def test_pods_with_templates_get_the_claims_the_controller_would_make(tmp_path: Path):
    """A snapshot taken while pods wait for kube-controller-manager holds their templates
    but no claims: simulate makes them as the controller would, allocates them, and the
    placed snapshot carries the claims and the pods' statuses naming them."""
    slices = [DRIVER.slice("n1", "a100"), DRIVER.slice("n2", "h100")]
    one = dra.template("ns", "one-gpu", dra.claim_spec(dra.request("gpu", GPU_CLASS, 1)))
    pods = [templated(f"w{i}", "one-gpu") for i in range(10)]
    pods.append(templated("lost", "absent"))
    devices = {
        "deviceclasses": [GPU],
        "resourceclaims": [],
        "resourceslices": slices,
        "resourceclaimtemplates": [one],
    }
    nodes = [node("n1"), node("n2"), node("n3")]
    snapshot = loads(dumps(from_objects(nodes, pods, devices=devices)))
    report, out, path = _replay(snapshot, tmp_path)
    # 8 GPUs for 10 pods of one each; the pod of a missing template gets no claim.
    assert (report["pods"], report["placed"]) == (11, 8)
    placed = loads(out.read_bytes())
    claims = {c["metadata"]["name"]: c for c in placed.devices["resourceclaims"]}
    assert len(claims) == 10
    by_pod = {p["metadata"]["name"]: p for p in placed.pods}
    bound = [p for p in placed.pods if p["spec"].get("nodeName")]
    assert len(bound) == 8
    by_name = {n["metadata"]["name"]: n for n in nodes}
    assert dra.check_allocations(bound, claims, slices, by_name) == []
    for name in (f"w{i}" for i in range(10)):
        (status,) = by_pod[name]["status"]["resourceClaimStatuses"]
        made = claims[status["resourceClaimName"]]
        assert status["resourceClaimName"].startswith(f"{name}-gpu-")
        assert made["metadata"]["ownerReferences"][0]["uid"] == f"uid-{name}"
        assert bool(made.get("status", {}).get("allocation")) == bool(
            by_pod[name]["spec"].get("nodeName")
        )
    assert "resourceClaimStatuses" not in (by_pod["lost"].get("status") or {})
    assert not by_pod["lost"]["spec"].get("nodeName")
    # The snapshot file as read is unchanged: no statuses written into its pods.
    assert all("status" not in p or not p["status"] for p in loads(path.read_bytes()).pods)
    # In-process too: the caller's snapshot keeps its pods as they were.
    summary = simulate(snapshot, Profile.default(), seed=1)
    assert summary.placed == 8
    assert all(not p.get("status") for p in snapshot.pods)
