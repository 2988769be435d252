"""NodeResourcesBalancedAllocation and ImageLocality."""

from kubesalvo.core.pernode.image_locality import normalized_image_name
from kubesalvo.core.plugins.balanced_allocation import NodeResourcesBalancedAllocationArgs
from kubesalvo.core.plugins.framework import ResourceSpec
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler

from .builders import node, pod

MB = 1024 * 1024


def plugin_scores(ref, p, plugin):
    return {n: s[plugin] for n, s in ref.scores(p).items()}


def test_balanced_allocation_is_one_minus_half_the_difference_for_two_resources():
    ref = ReferenceScheduler([node("n", cpu="4", memory="8Gi")])
    # fractions 0.25 and 0.125: 100 * (1 - 0.0625) = 93.75 -> 93
    p = pod(requests={"cpu": "1", "memory": "1Gi"})
    assert plugin_scores(ref, p, "NodeResourcesBalancedAllocation") == {"n": 93}


def test_balanced_allocation_uses_the_standard_deviation_for_more_resources():
    resources = tuple(ResourceSpec(r) for r in ("cpu", "memory", "ephemeral-storage"))
    profile = Profile(balanced_allocation=NodeResourcesBalancedAllocationArgs(resources))
    ref = ReferenceScheduler(
        [node("n", cpu="4", memory="8Gi", **{"ephemeral-storage": "100Gi"})], profile=profile
    )
    # fractions 0.25, 0.125, 0.5: standard deviation 0.1559 -> 84
    p = pod(requests={"cpu": "1", "memory": "1Gi", "ephemeral-storage": "50Gi"})
    assert plugin_scores(ref, p, "NodeResourcesBalancedAllocation") == {"n": 84}


def test_balanced_allocation_caps_fractions_and_skips_best_effort_pods():
    ref = ReferenceScheduler(
        [node("n", cpu="4", memory="8Gi")], [pod("b", requests={"memory": "16Gi"}, node_name="n")]
    )
    # memory is over-committed (fraction capped at 1), cpu at 0.5: 100 * (1 - 0.25)
    assert plugin_scores(ref, pod(requests={"cpu": "2"}), "NodeResourcesBalancedAllocation") == {
        "n": 75
    }
    assert plugin_scores(ref, pod(), "NodeResourcesBalancedAllocation") == {"n": 0}


def test_image_names_without_a_tag_mean_latest():
    assert normalized_image_name("nginx") == "nginx:latest"
    assert normalized_image_name("nginx:1.25") == "nginx:1.25"
    assert normalized_image_name("localhost:5000/app") == "localhost:5000/app:latest"
    assert normalized_image_name("localhost:5000/app:2") == "localhost:5000/app:2"


def test_image_locality_scales_sizes_by_spread_and_clamps():
    image = (["docker.io/library/nginx:1.25", "nginx:1.25"], 500 * MB)
    nodes = [node("a", images=[image]), node("b"), node("c", images=[image])]
    ref = ReferenceScheduler(nodes)
    # 500Mi * 2/3 = 349525333 bytes; 100 * (349525333 - 23Mi) / (1000Mi - 23Mi) = 31
    assert plugin_scores(ref, pod(image="nginx:1.25"), "ImageLocality") == {
        "a": 31,
        "b": 0,
        "c": 31,
    }
    # small images stay under the 23Mi threshold
    tiny = (["tiny:latest"], 10 * MB)
    ref = ReferenceScheduler([node("a", images=[tiny]), node("b")])
    assert plugin_scores(ref, pod(image="tiny"), "ImageLocality") == {"a": 0, "b": 0}


def test_image_locality_caps_at_1000mi_per_container_and_counts_init_containers():
    big = (["big:1"], 4000 * MB)
    ref = ReferenceScheduler([node("a", images=[big])])
    p = pod(image="big:1")
    assert plugin_scores(ref, p, "ImageLocality") == {"a": 100}
    p["spec"]["initContainers"] = [{"name": "init", "image": "other:1"}]
    # two containers: 2000Mi threshold, 4000Mi clamps to it: still 100
    assert plugin_scores(ref, p, "ImageLocality") == {"a": 100}
    half = (["half:1"], 1000 * MB)
    ref = ReferenceScheduler([node("a", images=[half])])
    p = pod(image="half:1")
    p["spec"]["initContainers"] = [{"name": "init", "image": "other:1"}]
    # 1000Mi of 2000Mi: 100 * (1000 - 23) / (2000 - 23) = 49
    assert plugin_scores(ref, p, "ImageLocality") == {"a": 49}


def test_image_size_is_the_first_reported_one():
    nodes = [node("a", images=[(["img:1"], 600 * MB)]), node("b", images=[(["img:1"], 900 * MB)])]
    scores = plugin_scores(ReferenceScheduler(nodes), pod(image="img:1"), "ImageLocality")
    # both use 600Mi (seen first), present on every node: 100 * (600 - 23) / (1000 - 23) = 59
    assert scores == {"a": 59, "b": 59}
