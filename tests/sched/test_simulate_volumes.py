"""``kubesalvo simulate --snapshot`` with storage objects: pods with WaitForFirstConsumer
claims take the nodes holding a free volume each, and the rest stay pending with the
scheduler's text, as the live scheduler would place them."""

from __future__ import annotations

from kubesalvo.core.profile import Profile
from kubesalvo.core.snapshot import dumps, from_objects, loads
from kubesalvo.sched import cli
from kubesalvo.sched.simulate.run import simulate
from tests.helpers.volumes import claim, claim_volume, local_volume, storage_class


def node(name: str) -> dict:
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def test_a_recorded_stateful_set_takes_one_free_volume_per_pod():
    volumes = []
    for name in ("a", "b"):
        pv = local_volume(f"pv-{name}", name)
        pv["status"] = {"phase": "Available"}
        volumes.append(pv)
    claims = [claim(f"data-web-{i}") for i in range(3)]
    pods = [
        {
            "metadata": {"name": f"web-{i}", "namespace": "ns", "uid": f"web-{i}"},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
                "volumes": [claim_volume("data", f"data-web-{i}")],
            },
        }
        for i in range(3)
    ]
    recorded = from_objects(
        [node("a"), node("b"), node("c")],
        pods,
        storage={
            "persistentvolumeclaims": claims,
            "persistentvolumes": volumes,
            "storageclasses": [storage_class("local")],
        },
    )
    summary = simulate(loads(dumps(recorded)), Profile.default())
    assert summary.placed == 2
    assert [text for text, _ in summary.messages] == [
        "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."
    ]


def test_simulate_scores_capacity_only_with_the_feature_gate(tmp_path):
    # One pod, a 4Gi claim: node a (8 cpus) holds a 5Gi volume, b (4 cpus) a 40Gi one.
    # Without the gate the emptier cpu decides (a); with it, the emptier volume (b).
    volumes = []
    for name, size in (("a", "5Gi"), ("b", "40Gi")):
        pv = local_volume(f"pv-{name}", name, size=size)
        pv["status"] = {"phase": "Available"}
        volumes.append(pv)
    big = node("a")
    big["status"]["allocatable"] = big["status"]["capacity"] = {
        "cpu": "8",
        "memory": "8Gi",
        "pods": "110",
    }
    web = {
        "metadata": {"name": "web-0", "namespace": "ns", "uid": "web-0"},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "volumes": [claim_volume("data", "data-web-0")],
        },
    }
    recorded = from_objects(
        [big, node("b")],
        [web],
        storage={
            "persistentvolumeclaims": [claim("data-web-0", size="4Gi")],
            "persistentvolumes": volumes,
            "storageclasses": [storage_class("local")],
        },
    )
    source = tmp_path / "cluster.snapshot"
    source.write_bytes(dumps(recorded))
    chosen = {}
    for flags in ((), ("--feature-gates", "StorageCapacityScoring=true")):
        out = tmp_path / f"placed{len(flags)}.snapshot"
        argv = ["simulate", "--snapshot", str(source), "--save-placed", str(out), *flags]
        assert cli.main(argv) == 0
        (placed,) = loads(out.read_bytes()).pods
        chosen[bool(flags)] = placed["spec"]["nodeName"]
    assert chosen == {False: "a", True: "b"}
