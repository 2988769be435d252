"""Invariants of the reference on random clusters: it is consistent with itself."""

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core.label_selectors import pod_affinity_error
from kubesalvo.core.plugins import coscheduling, framework
from kubesalvo.core.plugins.coscheduling.gang import group_minimums
from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.resources import pod_requests

from .strategies import HOST, NAMESPACES, clusters, pods

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
            assert coscheduling.ERR_REASON_GANG_MIN_AVAILABLE in result.message


# Selectors apimachinery refuses (old objects can still carry them).
INVALID_SELECTORS = (
    {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
    {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["web"]}]},
    {"matchLabels": {"bad key": "web"}},
    {"matchLabels": {"app": "not a value"}},
)
_SECTIONS = [
    (kind, field)
    for kind in ("podAffinity", "podAntiAffinity")
    for field in (
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
]


def _invalid_term(draw: st.DrawFn) -> dict:
    selector = draw(st.sampled_from(INVALID_SELECTORS))
    if draw(st.booleans()):
        return {"labelSelector": selector, "topologyKey": HOST}
    return {"labelSelector": {}, "namespaceSelector": selector, "topologyKey": HOST}


def _add_invalid_term(draw: st.DrawFn, spec: dict, kind: str, field: str) -> None:
    term = _invalid_term(draw)
    if field.startswith("preferred"):
        term = {"weight": 3, "podAffinityTerm": term}
    section = spec.setdefault("affinity", {}).setdefault(kind, {}).setdefault(field, [])
    section.insert(draw(st.integers(0, len(section))), term)


@SETTINGS
@given(clusters(), pods(names=st.just("incoming")), st.data())
def test_a_placed_pods_section_with_an_invalid_term_counts_as_if_absent(cluster, pod, data):
    nodes, bound = cluster
    corrupted, stripped = copy.deepcopy(bound), copy.deepcopy(bound)
    for bad, clean in zip(corrupted, stripped, strict=True):
        for kind, field in _SECTIONS:
            if data.draw(st.integers(0, 3)) == 0:
                _add_invalid_term(data.draw, bad["spec"], kind, field)
                (clean["spec"].get("affinity") or {}).get(kind, {}).pop(field, None)
    expected = ReferenceScheduler(nodes, stripped, NAMESPACES)
    ref = ReferenceScheduler(nodes, corrupted, NAMESPACES)
    assert ref.filter(pod) == expected.filter(pod)
    assert ref.scores(pod) == expected.scores(pod)


@SETTINGS
@given(clusters(), pods(names=st.just("incoming")), st.data())
def test_an_incoming_pod_with_an_invalid_selector_fails_as_its_plugin_says(cluster, pod, data):
    nodes, bound = cluster
    ref = ReferenceScheduler(nodes, bound, NAMESPACES)
    clean = ref.schedule(pod)
    feasible = [n for n, reasons in ref.filter(pod).items() if not reasons]
    bad = copy.deepcopy(pod)
    where = data.draw(st.sampled_from(("DoNotSchedule", "ScheduleAnyway", "term")))
    if where == "term":
        _add_invalid_term(data.draw, bad["spec"], *data.draw(st.sampled_from(_SECTIONS)))
        error = pod_affinity_error(bad["spec"])
        expected = framework.fit_error_message(
            len(nodes), {}, prefilter_message=f"parsing pod: {error}"
        )
        assert ref.schedule(bad).message == expected
        return
    constraint = {
        "maxSkew": 1,
        "topologyKey": HOST,
        "whenUnsatisfiable": where,
        "labelSelector": data.draw(st.sampled_from(INVALID_SELECTORS)),
    }
    bad["spec"]["topologySpreadConstraints"] = [
        *bad["spec"].get("topologySpreadConstraints", ()),
        constraint,
    ]
    own = [c for c in bad["spec"]["topologySpreadConstraints"] if c is not constraint]
    if where == "ScheduleAnyway" and not any(c["whenUnsatisfiable"] == where for c in own):
        # Soft constraints do not filter: the nodes that fit are the same.
        result = ref.schedule(bad)
        if len(feasible) == 0:
            assert result.message == clean.message
        elif len(feasible) == 1:
            assert result.node == feasible[0]
        else:
            assert result.error and result.message.startswith(
                'running PreScore plugin "PodTopologySpread"'
            )
    elif where == "DoNotSchedule":
        result = ref.schedule(bad)
        assert result.error and result.message.startswith(
            'running PreFilter plugin "PodTopologySpread"'
        )
