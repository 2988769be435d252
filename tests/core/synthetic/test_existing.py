"""Running load: placed pods never overcommit a node and respect the node's own rules."""

from __future__ import annotations

from collections import Counter, defaultdict

from kubesalvo.core.resources import node_allocatable, pod_requests
from kubesalvo.core.synthetic import existing, make_nodes, make_pods
from tests.helpers.feasibility import fits_empty_node


def place_mixed(nodes_count: int, pods_count: int, seed: int = 0):
    nodes = make_nodes(nodes_count, seed=seed)
    pods = make_pods(pods_count, seed=seed, shape="mixed")
    bound, pending = existing.place(pods, nodes, seed=seed)
    return nodes, pods, bound, pending


def test_every_pod_ends_bound_or_pending_in_input_order():
    _, pods, bound, pending = place_mixed(60, 1500)
    assert len(bound) + len(pending) == len(pods)
    position = {id(p): i for i, p in enumerate(pods)}
    assert [position[id(p)] for p in bound] == sorted(position[id(p)] for p in bound)
    assert all("nodeName" not in p["spec"] for p in pending)
    assert all(p["status"]["phase"] == "Running" for p in bound)


def test_no_node_is_overcommitted_on_any_resource():
    nodes, _, bound, pending = place_mixed(40, 2500)
    assert pending, "the test needs a fleet too small for the load"
    used: dict[str, Counter] = defaultdict(Counter)
    for pod in bound:
        used[pod["spec"]["nodeName"]].update({**pod_requests(pod), "pods": 1})
    for node in nodes:
        allocatable = node_allocatable(node)
        for resource, amount in used[node["metadata"]["name"]].items():
            assert amount <= allocatable.get(resource, 0), (node["metadata"]["name"], resource)


def test_pods_land_only_where_selectors_affinity_and_taints_allow():
    nodes, _, bound, _ = place_mixed(80, 800, seed=3)
    by_name = {n["metadata"]["name"]: n for n in nodes}
    for pod in bound:
        assert fits_empty_node(pod, by_name[pod["spec"]["nodeName"]]), pod["metadata"]["name"]


def test_intentionally_unschedulable_pods_stay_pending():
    _, _, bound, pending = place_mixed(80, 800, seed=4)
    assert not any(
        p["metadata"]["labels"]["kubesalvo.io/workload"] == "unschedulable" for p in bound
    )
    assert any(p["metadata"]["labels"]["kubesalvo.io/workload"] == "unschedulable" for p in pending)


def test_host_ports_and_self_anti_affinity_keep_one_per_node():
    _, _, bound, _ = place_mixed(120, 3000, seed=5)
    ports = Counter()
    anti = Counter()
    for pod in bound:
        node = pod["spec"]["nodeName"]
        for c in pod["spec"]["containers"]:
            for port in c.get("ports", []):
                ports[(node, port["hostPort"])] += 1
        terms = (
            pod["spec"].get("affinity", {}).get("podAntiAffinity", {})
            .get("requiredDuringSchedulingIgnoredDuringExecution", [])
        )  # fmt: skip
        if any(t["labelSelector"]["matchLabels"].get("app") == pod["metadata"]["labels"].get("app")
               for t in terms):  # fmt: skip
            anti[(node, pod["metadata"]["labels"]["app"])] += 1
    assert ports and max(ports.values()) == 1
    assert anti and max(anti.values()) == 1


def test_replicas_spread_over_the_nodes_they_may_use():
    nodes = make_nodes(50, seed=0)
    pods = make_pods(500, seed=0, shape="replicasets", classes=1)
    bound, pending = existing.place(pods, nodes, seed=0)
    assert not pending
    per_node = Counter(p["spec"]["nodeName"] for p in bound)
    most = max(per_node.values())
    request = {**pod_requests(pods[0]), "pods": 1}
    # A node holds fewer than the busiest (less one, for the last round) only when full.
    for node in nodes:
        count = per_node[node["metadata"]["name"]]
        if count < most - 1 and not node["spec"].get("taints"):
            allocatable = node_allocatable(node)
            assert any((count + 1) * request[r] > allocatable[r] for r in request)


def test_placement_is_deterministic_for_a_seed():
    def names(seed):
        bound, _ = existing.place(make_pods(400, seed=1), make_nodes(30, seed=1), seed=seed)
        return [(p["metadata"]["name"], p["spec"]["nodeName"]) for p in bound]

    assert names(2) == names(2)
    assert names(2) != names(3)


def test_without_nodes_every_pod_stays_pending():
    pods = make_pods(50, seed=0)
    bound, pending = existing.place(pods, [], seed=0)
    assert bound == [] and len(pending) == 50
