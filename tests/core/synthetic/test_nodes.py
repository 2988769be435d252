"""The fake node fleet: deterministic, well-formed Node objects with a realistic mix."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from kubesalvo.core.synthetic import Fleet, make_nodes
from kubesalvo.core.synthetic.nodes import apportion
from tests.helpers.quantities import parse

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
REQUIRED_LABELS = (
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type",
    "kubesalvo.io/pool",
)


def test_same_seed_gives_the_same_fleet():
    assert make_nodes(300, seed=7) == make_nodes(300, seed=7)


def test_different_seeds_give_different_fleets():
    assert make_nodes(300, seed=1) != make_nodes(300, seed=2)


def test_names_are_unique_dns_subdomains_and_match_the_hostname_label():
    nodes = make_nodes(2000, seed=3)
    names = [node["metadata"]["name"] for node in nodes]
    assert len(set(names)) == len(names) == 2000
    for node, name in zip(nodes, names, strict=True):
        assert DNS_SUBDOMAIN.match(name) and len(name) <= 63
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == name


def test_every_node_is_a_kwok_managed_v1_node_with_the_topology_labels():
    for node in make_nodes(500, seed=0):
        assert node["apiVersion"] == "v1" and node["kind"] == "Node"
        assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
        labels = node["metadata"]["labels"]
        for key in REQUIRED_LABELS:
            assert labels[key], key
        assert labels["topology.kubernetes.io/zone"].startswith(
            labels["topology.kubernetes.io/region"]
        )


def test_quantities_parse_and_allocatable_never_exceeds_capacity():
    for node in make_nodes(500, seed=5):
        capacity, allocatable = node["status"]["capacity"], node["status"]["allocatable"]
        assert set(capacity) == set(allocatable)
        for resource in ("cpu", "memory", "ephemeral-storage", "pods"):
            assert 0 < parse(allocatable[resource]) <= parse(capacity[resource]), resource
        for resource, amount in allocatable.items():
            assert parse(amount) <= parse(capacity[resource])


def test_allocatable_reserves_the_kubelet_share_of_a_four_core_machine():
    small = next(
        n
        for n in make_nodes(200)
        if n["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "m5.xlarge"
    )
    # 6% of the first core, 1% of the second, 0.5% of the third and fourth.
    assert small["status"]["allocatable"]["cpu"] == "3920m"
    assert small["status"]["capacity"]["cpu"] == "4"


def test_a_small_fleet_still_has_gpu_spot_and_tainted_pools():
    nodes = make_nodes(40, seed=0)
    pools = Counter(node["metadata"]["labels"]["kubesalvo.io/pool"] for node in nodes)
    assert pools["gpu"] == 2 and pools["spot"] == 6 and pools["general"] == 20
    taints = {
        (t["key"], t.get("value"), t["effect"])
        for node in nodes
        for t in node["spec"].get("taints", [])
    }
    assert ("dedicated", "gpu", "NoSchedule") in taints
    assert ("spot", "true", "PreferNoSchedule") in taints


def test_gpu_nodes_offer_gpus_and_carry_the_gpu_taint():
    gpu_nodes = [n for n in make_nodes(400, seed=9) if "nvidia.com/gpu" in n["status"]["capacity"]]
    assert len(gpu_nodes) == 20
    for node in gpu_nodes:
        assert int(node["status"]["allocatable"]["nvidia.com/gpu"]) >= 1
        assert {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"} in node["spec"][
            "taints"
        ]
        assert node["metadata"]["labels"]["nvidia.com/gpu.product"]


def test_the_fleet_has_several_machine_shapes_and_an_arm_pool():
    nodes = make_nodes(1000, seed=4)
    shapes = {n["metadata"]["labels"]["node.kubernetes.io/instance-type"] for n in nodes}
    assert len(shapes) >= 8
    arches = Counter(n["metadata"]["labels"]["kubernetes.io/arch"] for n in nodes)
    assert arches["arm64"] == 50 and arches["amd64"] == 950


def test_zones_are_balanced_within_each_pool():
    nodes = make_nodes(900, seed=0)
    per_zone = Counter(
        (
            n["metadata"]["labels"]["kubesalvo.io/pool"],
            n["metadata"]["labels"]["topology.kubernetes.io/zone"],
        )
        for n in nodes
    )
    for pool in ("general", "spot", "memory"):
        counts = [per_zone[(pool, z)] for z in ("us-east-1a", "us-east-1b", "us-east-1c")]
        assert max(counts) - min(counts) <= 1


def test_nodes_report_system_and_pulled_images_largest_first():
    for node in make_nodes(100, seed=2):
        images = node["status"]["images"]
        sizes = [image["sizeBytes"] for image in images]
        assert sizes == sorted(sizes, reverse=True)
        names = [name for image in images for name in image["names"]]
        assert "registry.k8s.io/pause:3.10" in names
        assert len(images) >= 4 + 3
        assert all(image["names"][0].count("@sha256:") == 1 for image in images)


def test_cordoned_nodes_are_unschedulable_and_tainted():
    nodes = make_nodes(300, seed=0, fleet=Fleet(cordoned_fraction=0.5))
    cordoned = [n for n in nodes if n["spec"].get("unschedulable")]
    assert 100 < len(cordoned) < 200
    for node in cordoned:
        assert {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"} in node["spec"][
            "taints"
        ]


def test_nodes_do_not_share_mutable_parts():
    first, second = make_nodes(2, seed=0, fleet=Fleet(pools=Fleet().pools[:1]))
    first["status"]["allocatable"]["cpu"] = "1"
    first["metadata"]["labels"]["x"] = "y"
    for image in first["status"]["images"]:
        image["names"].append("z")
    assert second["status"]["allocatable"]["cpu"] != "1"
    assert "x" not in second["metadata"]["labels"]
    assert not any("z" in image["names"] for image in second["status"]["images"])


def test_apportion_sums_to_the_total_by_largest_remainder():
    assert apportion(10, [0.5, 0.3, 0.2]) == [5, 3, 2]
    assert apportion(3, [1, 1, 1, 1]) == [1, 1, 1, 0]
    assert sum(apportion(12345, [0.5, 0.1, 0.12, 0.15, 0.05, 0.05, 0.03])) == 12345


def test_zero_nodes_and_bad_counts():
    assert make_nodes(0) == []
    with pytest.raises(ValueError, match="non-negative"):
        make_nodes(-1)


def test_nodes_for_a_server_leave_conditions_to_kwok():
    assert all("conditions" not in n["status"] for n in make_nodes(20))


def test_ready_nodes_report_what_kwok_would():
    for node in make_nodes(20, ready=True):
        conditions = {c["type"]: c["status"] for c in node["status"]["conditions"]}
        assert conditions["Ready"] == "True"
        assert conditions["MemoryPressure"] == conditions["DiskPressure"] == "False"


def test_shared_images_are_one_entry_per_image_and_otherwise_equal():
    shared = make_nodes(30, seed=1, shared_images=True)
    assert shared == make_nodes(30, seed=1)
    entries = [entry for node in shared for entry in node["status"]["images"]]
    by_name = {entry["names"][1]: entry for entry in entries}
    assert all(entry is by_name[entry["names"][1]] for entry in entries)
    # The lists stay each node's own.
    assert shared[0]["status"]["images"] is not shared[1]["status"]["images"]
