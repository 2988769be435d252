"""The per-node evaluator given a pod's DynamicResources cycle state (what ``explain`` gives
it): its Filter and its v1.37 Score are those the burst's kernel used, weight and
normalisation included."""

from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.pernode.evaluator import PodEvaluator
from kubesalvo.core.place import plan
from tests.core.dra.helpers import claim, device_class, gpus, request
from tests.core.dra.test_allocator_first_available import IS_H100, first_available, mixed_node
from tests.core.dra.test_place_devices import cluster, devices_for, node, pod
from tests.core.dra.test_score_first_available import scored_profile


def h100_first() -> tuple[dict, DraObjects]:
    """A pod whose claim asks an H100, else any GPU; node a has H100s, b A100s, c none."""
    wanted = claim(
        "c", first_available("gpu", request("big", selectors=[IS_H100]), request("small"))
    )
    objects = DraObjects.of([device_class()], [wanted], [*mixed_node("a", 0, 2), gpus("b", 2)])
    return pod("p", "c"), objects


def test_the_device_score_per_node_is_the_one_the_kernel_adds():
    p, objects = h100_first()
    evaluator = PodEvaluator([node("a"), node("b"), node("c")], profile=scored_profile())
    evaluator.devices["p"] = devices_for(p, objects)
    outcome = evaluator.evaluate(p)
    assert outcome.feasible == ["a", "b"]
    assert outcome.statuses["c"] is not None
    assert outcome.statuses["c"].reasons == ("cannot allocate all claims",)
    scores = evaluator.scores_for(p, outcome.feasible)
    # 8 points against 7, normalised 100 against 87, weight 2.
    assert scores["a"]["DynamicResources"] == 200
    assert scores["b"]["DynamicResources"] == 174
    # The kernel's total on a holds the same 200 over the total without the Score.
    kernel = plan(cluster("a", "b", "c"), [p], scored_profile(), devices=devices_for(p, objects))
    assert kernel.nodes == ["a"]
    assert kernel.scores[0] == sum(scores["a"].values())


def test_a_pod_whose_claims_the_prefilter_rejects_is_rejected_on_every_node():
    p = pod("p", "missing")
    _, objects = h100_first()
    evaluator = PodEvaluator([node("a"), node("b")], profile=scored_profile())
    evaluator.devices["p"] = devices_for(p, objects)
    outcome = evaluator.evaluate(p)
    assert outcome.feasible == []
    assert outcome.prefilter_message == 'resourceclaim.resource.k8s.io "missing" not found'
