"""v1.37's DynamicResources Score: each firstAvailable request adds 8 - i for the subrequest
i its allocation on the node takes; exactly requests add nothing; nodes without a stored
allocation score 0."""

from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.plugins.dynamic_resources import FIRST_AVAILABLE_MAX, subrequest_score
from tests.core.dra.helpers import claim, device_class, gpus, request
from tests.core.dra.test_allocator_first_available import IS_H100, first_available, mixed_node
from tests.core.dra.test_place_devices import cluster, devices_for, pod


def allocation(*requests: str) -> dict:
    return {"devices": {"results": [{"request": r, "device": "d", "pool": "p"} for r in requests]}}


def test_each_request_scores_the_subrequest_its_results_name_once():
    wanted = claim(
        "c",
        first_available("gpu", request("big"), request("small")),
        first_available("nic", request("fast"), request("slow"), request("any")),
        request("plain"),
    )
    # Two results of one subrequest count once; "plain" (exactly) adds nothing.
    taken = allocation("gpu/small", "gpu/small", "nic/any", "plain")
    assert subrequest_score([wanted], [taken]) == (FIRST_AVAILABLE_MAX - 1) + (
        FIRST_AVAILABLE_MAX - 2
    )
    assert subrequest_score([wanted], [allocation("gpu/big", "nic/fast")]) == 16


def test_claims_without_first_available_or_without_allocation_score_zero():
    plain = claim("c", request("gpu", count=2))
    assert subrequest_score([plain], [allocation("gpu", "gpu")]) == 0
    wanted = claim("d", first_available("gpu", request("big"), request("small")))
    assert subrequest_score([wanted], [None]) == 0


def test_pod_devices_score_each_node_by_the_subrequest_it_can_serve():
    # Node a has two H100s ("big" fits), node b only A100s ("small"), node c nothing.
    wanted = claim(
        "c", first_available("gpu", request("big", selectors=[IS_H100], count=2), request("small"))
    )
    objects = DraObjects.of([device_class()], [wanted], [*mixed_node("a", 0, 2), gpus("b", 2)])
    p = pod("p", "c")
    devices = devices_for(p, objects)
    state = cluster("a", "b", "c")
    names = state.names[: state.rows]
    codes = devices.filter_rows(
        names, state.present[: state.rows].astype(bool), state.node_labels.__getitem__
    )
    assert list(codes == 0) == [True, True, False]
    assert devices.scores(names).tolist() == [FIRST_AVAILABLE_MAX, FIRST_AVAILABLE_MAX - 1, 0]


def test_a_pod_without_first_available_requests_scores_zero_everywhere():
    objects = DraObjects.of([device_class()], [claim("c", request(count=1))], [gpus("a")])
    devices = devices_for(pod("p", "c"), objects)
    state = cluster("a", "b")
    names = state.names[: state.rows]
    devices.filter_rows(
        names, state.present[: state.rows].astype(bool), state.node_labels.__getitem__
    )
    assert devices.scores(names).tolist() == [0, 0]


def scored_profile():
    from kubesalvo.core.plugins import registry
    from kubesalvo.core.profile import Profile

    return Profile(scores=(*registry.DEFAULT_SCORE_WEIGHTS.items(), ("DynamicResources", 2)))


def test_with_the_score_the_pod_goes_where_its_first_subrequest_fits():
    """Node a (H100s) and node b (A100s) are alike but for their GPUs: the Score (weight 2,
    8 points against 7, normalised 100 against 87) decides for a, seed after seed; without
    it the nodes tie and the seeds spread the pod over both."""
    from kubesalvo.core.place import plan
    from kubesalvo.core.ties import TieBreak

    wanted = claim(
        "c", first_available("gpu", request("big", selectors=[IS_H100]), request("small"))
    )
    objects = DraObjects.of([device_class()], [wanted], [*mixed_node("a", 0, 2), gpus("b", 2)])
    p = pod("p", "c")
    scored, plain = set(), set()
    for seed in range(12):
        result = plan(
            cluster("a", "b"), [p], scored_profile(), devices=devices_for(p, objects),
            ties=TieBreak(seed),
        )  # fmt: skip
        scored.add(result.nodes[0])
        plain.add(plan(cluster("a", "b"), [p], devices=devices_for(p, objects),
                       ties=TieBreak(seed)).nodes[0])  # fmt: skip
    assert scored == {"a"}
    assert plain == {"a", "b"}
    # On a, the Score adds 2 x 100 to the node's total (on b it would add 2 x 87).
    seed = next(
        seed for seed in range(12)
        if plan(cluster("a", "b"), [p], devices=devices_for(p, objects),
                ties=TieBreak(seed)).nodes == ["a"]
    )  # fmt: skip
    with_score = plan(cluster("a", "b"), [p], scored_profile(), devices=devices_for(p, objects))
    without = plan(cluster("a", "b"), [p], devices=devices_for(p, objects), ties=TieBreak(seed))
    assert with_score.scores[0] - without.scores[0] == 200
