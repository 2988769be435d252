"""Invariants of the reference on random clusters: it is consistent with itself."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core import names
from kubesalvo.core.gang import group_minimums
from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.resources import pod_requests

from .strategies import NAMESPACES, clusters, pods

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(clusters(), pods(names=st.just("incoming")))
def test_schedule_picks_a_feasible_node_with_the_top_score_or_explains_every_node(cluster, pod):
    nodes, bound = cluster
    ref = ReferenceScheduler(nodes, bound, NAMESPACES)
    reasons = ref.filter(pod)
    result = ref.schedule(pod)
    feasible = {n for n, r in reasons.items() if not r}
    if feasible:
        totals = {n: sum(s.values()) for n, s in ref.scores(pod).items()}
        assert set(totals) == feasible
        assert result.node in result.best_nodes <= feasible
        assert result.score == max(totals.values())
        assert result.best_nodes == {n for n, t in totals.items() if t == result.score}
    else:
        assert result.node is None
        # every node gave at least one reason, and the counts add up to the reasons given
        assert all(reasons.values())
        assert sum(result.reason_counts.values()) == sum(len(r) for r in reasons.values())
        assert result.message.startswith(f"0/{len(nodes)} nodes are available:")


@SETTINGS
@given(clusters(), st.lists(pods(), min_size=1, max_size=8))
def test_a_burst_never_overcommits_and_gangs_are_all_or_nothing(cluster, burst):
    nodes, bound = cluster
    for i, pod in enumerate(burst):
        pod["metadata"]["name"] = f"burst{i}"
    ref = ReferenceScheduler(nodes, bound, NAMESPACES)
    results = ref.place_burst(burst)
    assert [r.pod for r in results] == [
        f"{p['metadata']['namespace']}/burst{i}" for i, p in enumerate(burst)
    ]
    where = {
        p["metadata"]["name"]: info.name
        for info in ref.snapshot.nodes
        for p in info.pods
        if p not in bound
    }
    for i, result in enumerate(results):
        assert where.get(f"burst{i}") == result.node
    for info in ref.snapshot.nodes:
        already = [p for p in bound if p["spec"]["nodeName"] == info.name]
        assert len(info.pods) <= max(info.allocatable["pods"], len(already))
        for resource in ("cpu", "memory", "example.com/gpu"):
            placed = sum(pod_requests(p).get(resource, 0) for p in info.pods if p not in bound)
            before = sum(pod_requests(p).get(resource, 0) for p in already)
            # the last pod that asked for the resource fitted beside everything before it
            assert placed == 0 or before + placed <= info.allocatable.get(resource, 0)
    minimums = group_minimums(burst)
    for key, minimum in minimums.items():
        members = [r for r in results if r.group == key]
        placed = sum(r.node is not None for r in members)
        assert placed == 0 or placed >= minimum
        if placed == 0:
            assert all(r.rolled_back or r.reason_counts for r in members)
    for result in results:
        if result.rolled_back:
            assert names.ERR_REASON_GANG_MIN_AVAILABLE in result.message
