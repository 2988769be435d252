"""place_burst against the reference for label selectors apimachinery refuses.

Such selectors cannot be created through the API server today, but older objects carry
them: a placed pod's affinity section with one is dropped whole, an incoming pod with one
in its affinity terms is rejected by InterPodAffinity's PreFilter, and one in a
DoNotSchedule spread constraint fails the attempt with PodTopologySpread's error.
"""

from __future__ import annotations

import copy
from typing import Any

from kubesalvo.core.label_selectors import label_selector_error
from kubesalvo.core.place import place_burst
from kubesalvo.core.plugins import (
    framework,
    inter_pod_affinity,
    names,
    node_affinity,
    pod_topology_spread,
    registry,
)
from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.plugins.inter_pod_affinity import InterPodAffinityArgs
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.state import ClusterState

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
# An In requirement without values: "values: Invalid value: null: for 'in', 'notin'
# operators, values set can't be empty".
INVALID = {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}
BAD_KEY = {"matchLabels": {"bad key": "x"}}


def node(name: str, zone: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {HOST: name, ZONE: zone}},
        "spec": {},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str, labels: dict[str, str], node_name: str = "", **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": "100m"}}}
    out: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels},
        "spec": {"containers": [container], **spec},
    }
    if node_name:
        out["spec"]["nodeName"] = node_name
    return out


def term(selector: dict[str, Any], key: str = HOST, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": selector, "topologyKey": key, **extra}


def preferred(weight: int, selector: dict[str, Any], key: str = HOST) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": term(selector, key)}


NODES = [node("n0", "a"), node("n1", "a"), node("n2", "b")]


def both(placed: list[dict[str, Any]], burst: list[dict[str, Any]], profile: Profile | None = None):
    """The kernel's and the reference's results for ``burst`` over ``placed``."""
    state = ClusterState()
    for n in NODES:
        state.add_node(n)
    for p in placed:
        state.add_pod(p)
    result = place_burst(state, burst, profile)
    chosen = {
        f"ns/{p['metadata']['name']}": node for p, node in zip(burst, result.nodes, strict=True)
    }

    def follow(ref: Any) -> str:
        """The kernel's node where it is among the reference's best (ties are drawn at
        random), so that both go on from the same state."""
        node = chosen.get(ref.pod)
        return node if node in ref.best_nodes else ref.node

    reference = ReferenceScheduler(NODES, copy.deepcopy(placed), profile=profile)
    expected = reference.place_burst(copy.deepcopy(burst), choose=follow)
    return result, expected


def assert_same(result, expected) -> None:
    """Same nodes (among the reference's best), messages, reason counts and errors."""
    for i, want in enumerate(expected):
        if want.node is None:
            assert result.nodes[i] is None
            assert result.messages[i] == want.message
            assert result.reason_counts[i] == want.reason_counts
        else:
            assert result.nodes[i] in want.best_nodes
        assert result.errors[i] == (want.message if want.error else "")


def test_a_placed_pods_section_with_an_invalid_term_is_dropped_and_its_other_sections_count():
    # The db pod's required anti-affinity would keep web pods off n0's host; one of its
    # terms is invalid, so the whole section is gone. Its preferred affinity for web pods
    # still counts and draws them to n0; its required affinity (hardPodAffinityWeight)
    # has an invalid term too and adds nothing.
    db = pod(
        "db",
        {"app": "db"},
        "n0",
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    term({"matchLabels": {"app": "web"}}),
                    term({"matchLabels": {"app": "web"}}, namespaceSelector=BAD_KEY),
                ]
            },
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    term({"matchLabels": {"app": "web"}}, ZONE),
                    term(INVALID, ZONE),
                ],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    preferred(100, {"matchLabels": {"app": "web"}})
                ],
            },
        },
    )
    burst = [pod(f"web{i}", {"app": "web"}) for i in range(3)]
    result, expected = both([db], burst)
    assert [r.node for r in expected] == ["n0", "n0", "n0"]
    assert_same(result, expected)


def test_a_placed_pods_invalid_preferred_section_adds_no_score():
    # Without the invalid term, the preferred anti-affinity (weight 100) would push web
    # pods off n0 and n1 (zone a); dropped, the required affinity's hard weight pulls
    # them to zone a.
    db = pod(
        "db",
        {"app": "db"},
        "n0",
        affinity={
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    preferred(100, {"matchLabels": {"app": "web"}}, ZONE),
                    preferred(1, INVALID),
                ]
            },
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    term({"matchLabels": {"app": "web"}}, ZONE)
                ]
            },
        },
    )
    burst = [pod("web", {"app": "web"})]
    result, expected = both([db], burst)
    assert expected[0].node in ("n0", "n1")
    assert_same(result, expected)


def test_an_incoming_pod_with_an_invalid_affinity_term_is_rejected_at_prefilter():
    affinity = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [preferred(10, INVALID)]
        }
    }
    burst = [
        pod("bad", {"app": "web"}, affinity=affinity),
        pod("good", {"app": "web"}),
    ]
    result, expected = both([], burst)
    error = label_selector_error(INVALID)
    text = f"{inter_pod_affinity.PARSING_POD}preferredAntiAffinityTerms: {error}"
    assert expected[0].message == framework.fit_error_message(3, {}, prefilter_message=text)
    assert expected[0].reason_counts == {text: 3}
    assert not expected[0].error
    assert result.nodes[0] is None and result.nodes[1] is not None
    assert result.rejectors[0] == {"InterPodAffinity"}
    assert result.prefilter_rejector[:2] == ["InterPodAffinity", ""]
    assert_same(result, expected)


def test_a_node_affinity_conflict_is_reported_before_an_invalid_affinity_term():
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["n0"]},
                            {"key": "metadata.name", "operator": "In", "values": ["n1"]},
                        ]
                    }
                ]
            }
        },
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(INVALID)]},
    }
    result, expected = both([], [pod("bad", {"app": "web"}, affinity=affinity)])
    assert expected[0].reason_counts == {node_affinity.ERR_REASON_NODE_AFFINITY_CONFLICT: 3}
    # The PreFilter that rejected it is known as such, not found by reading the text back.
    assert result.prefilter_rejector == ["NodeAffinity"]
    assert result.rejectors == [{"NodeAffinity"}]
    assert_same(result, expected)


def spread(selector: dict[str, Any], when: str = "DoNotSchedule") -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": when,
            "labelSelector": selector,
        }
    ]


def test_an_invalid_hard_spread_selector_fails_the_attempt_with_an_error():
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(BAD_KEY)]}}
    burst = [
        pod("bad", {"app": "web"}, topologySpreadConstraints=spread(INVALID)),
        # PodTopologySpread's PreFilter runs before InterPodAffinity's: the error wins.
        pod("both", {"app": "db"}, topologySpreadConstraints=spread(INVALID), affinity=affinity),
        pod("good", {"app": "web"}, topologySpreadConstraints=spread({"matchLabels": {}})),
    ]
    result, expected = both([], burst)
    text = pod_topology_spread.HARD_SPREAD_CONSTRAINTS_ERROR + str(label_selector_error(INVALID))
    assert [r.error for r in expected] == [True, True, False]
    assert expected[0].message == expected[1].message == text
    assert result.errors == [text, text, ""]
    assert result.messages[:2] == [text, text]
    assert result.reason_counts[:2] == [{}, {}]
    assert result.nodes[:2] == [None, None] and result.nodes[2] is not None
    assert_same(result, expected)


def test_without_the_spread_filter_an_invalid_hard_selector_is_no_error():
    profile = Profile(
        filters=tuple(f for f in registry.DEFAULT_FILTER_ORDER if f != names.POD_TOPOLOGY_SPREAD),
        scores=tuple(
            (plugin, weight)
            for plugin, weight in registry.DEFAULT_SCORE_WEIGHTS.items()
            if plugin != names.POD_TOPOLOGY_SPREAD
        ),
    )
    burst = [pod("bad", {"app": "web"}, topologySpreadConstraints=spread(INVALID))]
    result, expected = both([], burst, profile)
    assert expected[0].node is not None and not expected[0].error
    assert_same(result, expected)


def test_the_profiles_filter_order_decides_which_prefilter_answers_first():
    # InterPodAffinity listed before PodTopologySpread: its rejection comes first.
    order = [f for f in registry.DEFAULT_FILTER_ORDER if f != names.INTER_POD_AFFINITY]
    order.insert(order.index(names.POD_TOPOLOGY_SPREAD), names.INTER_POD_AFFINITY)
    profile = Profile(filters=tuple(order))
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(BAD_KEY)]}}
    burst = [
        pod("both", {"app": "db"}, topologySpreadConstraints=spread(INVALID), affinity=affinity)
    ]
    result, expected = both([], burst, profile)
    text = f"{inter_pod_affinity.PARSING_POD}requiredAffinityTerms: {label_selector_error(BAD_KEY)}"
    assert not expected[0].error and expected[0].reason_counts == {text: 3}
    assert result.errors == [""]
    assert_same(result, expected)


def _schedule_anyway_cases() -> list[dict[str, Any]]:
    return [
        pod("soft", {"app": "web"}, topologySpreadConstraints=spread(INVALID, "ScheduleAnyway")),
        pod("fine", {"app": "web"}, topologySpreadConstraints=spread({}, "ScheduleAnyway")),
    ]


def test_an_invalid_soft_spread_selector_fails_the_attempt_at_prescore():
    """Three feasible nodes: PodTopologySpread's PreScore runs and fails the attempt."""
    result, expected = both([], _schedule_anyway_cases())
    text = pod_topology_spread.SOFT_SPREAD_CONSTRAINTS_ERROR + str(label_selector_error(INVALID))
    assert [r.error for r in expected] == [True, False]
    assert expected[0].message == text
    assert result.errors == [text, ""]
    assert result.messages[0] == text and result.reason_counts[0] == {}
    assert result.nodes[0] is None and result.nodes[1] is not None
    assert_same(result, expected)


def test_an_invalid_soft_spread_selector_is_no_error_with_one_feasible_node():
    """kube-scheduler skips scoring, PreScore included, when a single node is feasible."""
    only = {"nodeSelector": {HOST: "n2"}}
    burst = [
        pod(
            "soft",
            {"app": "web"},
            topologySpreadConstraints=spread(INVALID, "ScheduleAnyway"),
            **only,
        )
    ]
    result, expected = both([], burst)
    assert expected[0].node == "n2" and not expected[0].error
    assert result.nodes == ["n2"] and result.errors == [""]
    assert_same(result, expected)


def test_an_invalid_soft_spread_selector_with_no_feasible_node_gets_the_filters_message():
    burst = [
        pod(
            "soft",
            {"app": "web"},
            topologySpreadConstraints=spread(INVALID, "ScheduleAnyway"),
            nodeSelector={"disk": "ssd"},
        )
    ]
    result, expected = both([], burst)
    assert not expected[0].error and expected[0].node is None
    assert result.errors == [""] and result.messages[0] == expected[0].message
    assert_same(result, expected)


def test_without_the_spread_score_an_invalid_soft_selector_is_no_error():
    profile = Profile(
        scores=tuple(
            (plugin, weight)
            for plugin, weight in registry.DEFAULT_SCORE_WEIGHTS.items()
            if plugin != names.POD_TOPOLOGY_SPREAD
        ),
    )
    result, expected = both([], _schedule_anyway_cases(), profile)
    assert [r.error for r in expected] == [False, False]
    assert result.errors == ["", ""] and None not in result.nodes
    assert_same(result, expected)


def test_an_invalid_preferred_affinity_term_fails_at_prescore_without_the_filter():
    """With InterPodAffinity's filter off, its PreScore is the first to read the terms."""
    profile = Profile(
        filters=tuple(f for f in registry.DEFAULT_FILTER_ORDER if f != names.INTER_POD_AFFINITY)
    )
    affinity = {
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(10, BAD_KEY)]}
    }
    burst = [pod("pref", {"app": "db"}, affinity=affinity), pod("fine", {"app": "db"})]
    result, expected = both([], burst, profile)
    assert [r.error for r in expected] == [True, False]
    assert expected[0].message.startswith(inter_pod_affinity.PRESCORE_PARSING_POD)
    assert result.errors == [expected[0].message, ""]
    assert_same(result, expected)


def test_a_gang_member_failing_at_prescore_rolls_its_gang_back():
    labels = {gang.GROUP_LABELS[0]: "g", gang.MIN_AVAILABLE_LABEL: "2"}
    burst = [
        pod("g0", {**labels, "app": "web"}),
        pod(
            "g1",
            {**labels, "app": "web"},
            topologySpreadConstraints=spread(INVALID, "ScheduleAnyway"),
        ),
    ]
    result, expected = both([], burst)
    assert [r.node for r in expected] == [None, None]
    assert result.nodes == [None, None]
    assert result.errors[1] == expected[1].message and expected[1].error
    assert bool(result.rolled_back[0]) == expected[0].rolled_back


def test_ignoring_existing_preferred_terms_prescore_skips_a_pod_without_its_own():
    """With the filter off and ignorePreferredTermsOfExistingPods, InterPodAffinity's
    PreScore skips a pod with no preferred term before parsing its terms: its invalid
    required term is no error; an invalid preferred term still is."""
    profile = Profile(
        filters=tuple(f for f in registry.DEFAULT_FILTER_ORDER if f != names.INTER_POD_AFFINITY),
        inter_pod_affinity=InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=True),
    )
    required = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(INVALID)]}}
    with_preferred = {
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred(10, BAD_KEY)]}
    }
    burst = [
        pod("required", {"app": "db"}, affinity=required),
        pod("pref", {"app": "db"}, affinity=with_preferred),
    ]
    result, expected = both([], burst, profile)
    assert [r.error for r in expected] == [False, True]
    assert expected[1].message.startswith(inter_pod_affinity.PRESCORE_PARSING_POD)
    assert result.errors == ["", expected[1].message]
    assert_same(result, expected)
