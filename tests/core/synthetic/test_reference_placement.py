"""A mixed burst, placed by the reference scheduler with every filter (spread and inter-pod
terms included), leaves pending exactly the pods that are meant to be unschedulable."""

from __future__ import annotations

from kubesalvo.core.reference.scheduler import ReferenceScheduler
from kubesalvo.core.synthetic import make_nodes, make_pods, namespace_objects


def test_only_the_intentionally_unschedulable_pods_stay_pending():
    nodes = make_nodes(50, seed=2)
    pods = make_pods(300, seed=2, shape="mixed")
    results = ReferenceScheduler(nodes, [], namespace_objects()).place_burst(pods)
    kinds = [pod["metadata"]["labels"]["kubesalvo.io/workload"] for pod in pods]
    unplaced = {kind for kind, result in zip(kinds, results, strict=True) if result.node is None}
    assert unplaced == {"unschedulable"}
    assert sum(r.node is None for r in results) == kinds.count("unschedulable") > 0


def test_every_distinct_pod_is_placed():
    nodes = make_nodes(40, seed=3)
    results = ReferenceScheduler(nodes, [], namespace_objects()).place_burst(
        make_pods(150, seed=3, shape="distinct")
    )
    assert all(result.node is not None for result in results)
