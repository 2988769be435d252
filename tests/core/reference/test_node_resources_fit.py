"""NodeResourcesFit: the filter's reasons and the three scoring strategies."""

from kubesalvo.core.plugins import node_resources_fit
from kubesalvo.core.plugins.framework import ResourceSpec
from kubesalvo.core.plugins.node_resources_fit import (
    NodeResourcesFitArgs,
    ScoringStrategy,
    ShapePoint,
)
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler

from .builders import node, pod


def test_every_insufficient_resource_is_listed_and_counted():
    nodes = [
        node("tiny", cpu="1", memory="1Gi"),
        node("cpu-only", cpu="8", memory="1Gi"),
        node("ok", cpu="8", memory="8Gi"),
    ]
    ref = ReferenceScheduler(nodes)
    p = pod(requests={"cpu": "2", "memory": "2Gi"})
    assert ref.filter(p) == {
        "tiny": ["Insufficient cpu", "Insufficient memory"],
        "cpu-only": ["Insufficient memory"],
        "ok": [],
    }


def test_requests_are_checked_against_what_bound_pods_left():
    nodes = [node("n", cpu="4")]
    bound = [pod(f"b{i}", requests={"cpu": "1500m"}, node_name="n") for i in range(2)]
    ref = ReferenceScheduler(nodes, bound)
    assert ref.filter(pod(requests={"cpu": "1"})) == {"n": []}
    assert ref.filter(pod(requests={"cpu": "1001m"})) == {"n": ["Insufficient cpu"]}


def test_finished_pods_and_pods_on_unknown_nodes_take_nothing():
    done = pod("done", requests={"cpu": "4"}, node_name="n")
    done["status"] = {"phase": "Succeeded"}
    elsewhere = pod("gone", requests={"cpu": "4"}, node_name="missing")
    ref = ReferenceScheduler([node("n", cpu="4")], [done, elsewhere])
    assert ref.filter(pod(requests={"cpu": "4"})) == {"n": []}


def test_too_many_pods_comes_first_and_applies_to_empty_requests():
    nodes = [node("n", pods="1")]
    ref = ReferenceScheduler(nodes, [pod("b", node_name="n")])
    assert ref.filter(pod()) == {"n": [node_resources_fit.ERR_REASON_TOO_MANY_PODS]}
    assert ref.filter(pod(requests={"cpu": "8"})) == {
        "n": [node_resources_fit.ERR_REASON_TOO_MANY_PODS, "Insufficient cpu"]
    }


def test_an_extended_resource_absent_from_the_node_is_insufficient():
    nodes = [node("plain"), node("gpu", **{"nvidia.com/gpu": "2"})]
    ref = ReferenceScheduler(nodes)
    p = pod(requests={"nvidia.com/gpu": "1"})
    assert ref.filter(p) == {"plain": ["Insufficient nvidia.com/gpu"], "gpu": []}
    assert ref.schedule(pod(requests={"nvidia.com/gpu": "3"})).message == (
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    )


def test_ignored_resources_and_groups_are_not_checked():
    nodes = [node("plain")]
    p = pod(requests={"example.com/foo": "1", "vendor.io/bar": "1"})
    ref = ReferenceScheduler(
        nodes,
        profile=Profile(fit=NodeResourcesFitArgs(ignored_resources=("example.com/foo",))),
    )
    assert ref.filter(p) == {"plain": ["Insufficient vendor.io/bar"]}
    ref = ReferenceScheduler(
        nodes,
        profile=Profile(
            fit=NodeResourcesFitArgs(
                ignored_resources=("example.com/foo",),
                ignored_resource_groups=("vendor.io",),
            )
        ),
    )
    assert ref.filter(p) == {"plain": []}


def test_a_pod_with_only_init_containers_needs_its_largest_init_container():
    p = pod()
    p["spec"]["containers"] = []
    p["spec"]["initContainers"] = [
        {"name": "a", "resources": {"requests": {"cpu": "3"}}},
        {"name": "b", "resources": {"requests": {"cpu": "1"}}},
    ]
    ref = ReferenceScheduler([node("two", cpu="2"), node("three", cpu="3")])
    assert ref.filter(p) == {"two": ["Insufficient cpu"], "three": []}


def test_sidecars_count_beside_the_containers():
    p = pod(requests={"cpu": "1"})
    p["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}
    ]
    ref = ReferenceScheduler([node("one", cpu="1500m"), node("two", cpu="2")])
    assert ref.filter(p) == {"one": ["Insufficient cpu"], "two": []}


def fit_scores(nodes, p, strategy=None, bound=()):
    profile = Profile(fit=NodeResourcesFitArgs(scoring_strategy=strategy or ScoringStrategy()))
    return {
        n: s["NodeResourcesFit"]
        for n, s in ReferenceScheduler(nodes, bound, profile=profile).scores(p).items()
    }


def test_least_allocated_averages_free_fractions_with_weights():
    nodes = [node("a", cpu="4", memory="4Gi"), node("b", cpu="8", memory="2Gi")]
    p = pod(requests={"cpu": "1", "memory": "1Gi"})
    # a: cpu 75, memory 75 -> 75; b: cpu 87, memory 50 -> 68
    assert fit_scores(nodes, p) == {"a": 75, "b": 68}
    weighted = ScoringStrategy(resources=(ResourceSpec("cpu", 3), ResourceSpec("memory", 1)))
    # b: (87 * 3 + 50) / 4 = 77
    assert fit_scores(nodes, p, weighted) == {"a": 75, "b": 77}


def test_most_allocated_prefers_full_nodes():
    nodes = [node("a", cpu="4", memory="4Gi"), node("b", cpu="8", memory="2Gi")]
    p = pod(requests={"cpu": "1", "memory": "1Gi"})
    most = ScoringStrategy(type="MostAllocated")
    # a: 25, 25 -> 25; b: 12, 50 -> 31
    assert fit_scores(nodes, p, most) == {"a": 25, "b": 31}


def test_requests_without_cpu_or_memory_score_with_the_nonzero_defaults():
    nodes = [node("a", cpu="1", memory="1000Mi")]
    # the pod counts 100m cpu (90 free of 100) and 200Mi memory (80 free)
    assert fit_scores(nodes, pod()) == {"a": 85}
    explicit_zero = pod(requests={"cpu": "0", "memory": "0"})
    assert fit_scores(nodes, explicit_zero) == {"a": 100}


def test_bound_pods_without_requests_count_with_the_nonzero_defaults_too():
    nodes = [node("a", cpu="1", memory="1000Mi")]
    bound = [pod("b", node_name="a")]
    # node nonzero: 100m / 200Mi, pod adds 100m / 200Mi -> cpu 80, memory 60 -> 70
    assert fit_scores(nodes, pod(), bound=bound) == {"a": 70}


def test_scalar_resources_count_only_when_requested_and_offered():
    strategy = ScoringStrategy(
        resources=(ResourceSpec("cpu", 1), ResourceSpec("nvidia.com/gpu", 1))
    )
    nodes = [node("gpu", cpu="4", **{"nvidia.com/gpu": "4"}), node("plain", cpu="4")]
    p = pod(requests={"cpu": "2", "nvidia.com/gpu": "1"})
    # gpu: cpu 50, gpu 75 -> 62 (plain cannot hold the pod)
    assert fit_scores(nodes, p, strategy) == {"gpu": 62}
    # a pod without GPUs is scored on cpu alone everywhere
    assert fit_scores(nodes, pod(requests={"cpu": "2"}), strategy) == {"gpu": 50, "plain": 50}


def test_requested_to_capacity_ratio_follows_the_shape():
    shape = (ShapePoint(0, 0), ShapePoint(100, 10))  # a bin-packing line
    strategy = ScoringStrategy(type="RequestedToCapacityRatio", shape=shape)
    nodes = [node("a", cpu="4", memory="4Gi"), node("b", cpu="8", memory="8Gi")]
    p = pod(requests={"cpu": "1", "memory": "1Gi"})
    # a: 25% -> 25 on both; b: cpu 12% -> 12, memory 12% -> 12
    assert fit_scores(nodes, p, strategy) == {"a": 25, "b": 12}


def test_requested_to_capacity_ratio_interpolates_descending_shapes_and_rounds():
    shape = (ShapePoint(0, 10), ShapePoint(30, 3), ShapePoint(100, 0))
    strategy = ScoringStrategy(type="RequestedToCapacityRatio", shape=shape)
    nodes = [node("a", cpu="10", memory="10Gi")]
    p = pod(requests={"cpu": "1", "memory": "5Gi"})
    # cpu 10%: 100 + (30 - 100) * 10 / 30 = 100 - 23 = 77 (Go truncates toward zero)
    # memory 50%: 30 + (0 - 30) * 20 / 70 = 30 - 8 = 22; mean 49.5 rounds to 50
    assert fit_scores(nodes, p, strategy) == {"a": 50}


def test_requested_to_capacity_ratio_leaves_zero_scoring_resources_out():
    shape = (ShapePoint(0, 0), ShapePoint(100, 10))
    strategy = ScoringStrategy(type="RequestedToCapacityRatio", shape=shape)
    nodes = [node("a", cpu="4", memory="4Gi")]
    p = pod(requests={"cpu": "2", "memory": "0"})
    # memory 0% scores 0 and is dropped from the mean: only cpu's 50 remains
    assert fit_scores(nodes, p, strategy) == {"a": 50}


def test_pods_with_pod_level_requests_are_scored_on_their_containers():
    nodes = [node("a", cpu="4", memory="8Gi")]
    p = pod(requests={"cpu": "1m"}, resources={"requests": {"cpu": "1", "memory": "2Gi"}})
    # the score sees 1m cpu (100 free) and 200Mi memory (97), not the pod-level 1 cpu / 2Gi
    assert fit_scores(nodes, p) == {"a": 98}
