"""NodeAffinity: nodeSelector, required terms, Gt/Lt, matchFields, addedAffinity, score."""

import pytest

from kubesalvo.core.plugins import framework, names, node_affinity
from kubesalvo.core.plugins.node_affinity import NodeAffinityArgs
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import PodInvalid, ReferenceScheduler

from .builders import node, pod

NODES = [
    node("small", {"size": "8", "disk": "ssd"}),
    node("large", {"size": "64", "disk": "hdd"}),
    node("odd", {"size": "big"}),
    node("bare"),
]


def required(*terms):
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def expr(key, operator, *values):
    out = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def feasible(p, nodes=NODES, profile=None):
    return sorted(
        n
        for n, reasons in ReferenceScheduler(nodes, profile=profile).filter(p).items()
        if not reasons
    )


def test_node_selector_needs_every_pair():
    assert feasible(pod(nodeSelector={"disk": "ssd"})) == ["small"]
    assert feasible(pod(nodeSelector={"disk": "ssd", "size": "64"})) == []


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (expr("disk", "In", "ssd", "nvme"), ["small"]),
        (expr("disk", "NotIn", "ssd"), ["bare", "large", "odd"]),  # absent label matches NotIn
        (expr("disk", "Exists"), ["large", "small"]),
        (expr("disk", "DoesNotExist"), ["bare", "odd"]),
        (expr("size", "Gt", "10"), ["large"]),  # "big" is not an integer: never Gt
        (expr("size", "Lt", "10"), ["small"]),
        (expr("size", "Gt", "-1"), ["large", "small"]),
        (expr("size", "Lt", "+9"), ["small"]),
    ],
)
def test_required_expression_operators(expression, expected):
    assert feasible(pod(affinity=required({"matchExpressions": [expression]}))) == expected


def test_terms_are_ored_and_expressions_anded():
    p = pod(
        affinity=required(
            {"matchExpressions": [expr("disk", "Exists"), expr("size", "Gt", "10")]},
            {"matchExpressions": [expr("size", "In", "big")]},
        )
    )
    assert feasible(p) == ["large", "odd"]


def test_a_term_with_a_non_integer_gt_value_never_matches_but_others_still_can():
    p = pod(
        affinity=required(
            {"matchExpressions": [expr("size", "Gt", "ten")]},
            {"matchExpressions": [expr("disk", "In", "hdd")]},
        )
    )
    assert feasible(p) == ["large"]


def test_required_affinity_without_terms_matches_no_node():
    assert feasible(pod(affinity=required())) == []
    assert feasible(pod(affinity=required({}))) == []  # empty terms are dropped


def test_node_selector_and_required_affinity_must_both_hold():
    p = pod(
        nodeSelector={"disk": "hdd"},
        affinity=required({"matchExpressions": [expr("size", "Lt", "10")]}),
    )
    assert feasible(p) == []


def test_match_fields_on_metadata_name_narrow_the_nodes_in_prefilter():
    p = pod(affinity=required({"matchFields": [expr("metadata.name", "In", "large")]}))
    ref = ReferenceScheduler(NODES)
    narrowed = framework.prefilter_narrowing_reason([names.NODE_AFFINITY])
    assert ref.filter(p) == {
        "small": [narrowed],
        "large": [],
        "odd": [narrowed],
        "bare": [narrowed],
    }
    p2 = pod(
        affinity=required(
            {
                "matchFields": [expr("metadata.name", "In", "large")],
                "matchExpressions": [expr("disk", "In", "ssd")],
            }
        )
    )
    assert ref.schedule(p2).message == (
        "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_match_fields_not_in_excludes_a_node():
    p = pod(affinity=required({"matchFields": [expr("metadata.name", "NotIn", "large")]}))
    assert feasible(p) == ["bare", "odd", "small"]


def test_disjoint_node_names_in_one_term_are_a_prefilter_conflict():
    p = pod(
        affinity=required(
            {
                "matchFields": [
                    expr("metadata.name", "In", "small"),
                    expr("metadata.name", "In", "large"),
                ]
            }
        )
    )
    result = ReferenceScheduler(NODES).schedule(p)
    assert result.node is None
    assert result.message == "0/4 nodes are available: pod affinity terms conflict."


def test_added_affinity_is_enforced_first_with_its_own_reason():
    added = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [expr("disk", "Exists")]}]
        }
    }
    profile = Profile(node_affinity=NodeAffinityArgs(added))
    ref = ReferenceScheduler(NODES, profile=profile)
    reasons = ref.filter(pod(nodeSelector={"size": "big"}))
    assert reasons == {
        "small": [node_affinity.ERR_REASON_NODE_AFFINITY],
        "large": [node_affinity.ERR_REASON_NODE_AFFINITY],
        "odd": [node_affinity.ERR_REASON_ENFORCED_NODE_AFFINITY],
        "bare": [node_affinity.ERR_REASON_ENFORCED_NODE_AFFINITY],
    }


def test_preferred_terms_score_the_sum_of_matching_weights_normalised():
    preferred = [
        {"weight": 30, "preference": {"matchExpressions": [expr("disk", "In", "ssd")]}},
        {"weight": 10, "preference": {"matchExpressions": [expr("size", "Exists")]}},
        {"weight": 0, "preference": {"matchExpressions": [expr("size", "Exists")]}},
    ]
    p = pod(
        affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    )
    scores = ReferenceScheduler(NODES).scores(p)
    # raw sums 40, 10, 10, 0 -> 100, 25, 25, 0, times weight 2
    assert {n: s["NodeAffinity"] for n, s in scores.items()} == {
        "small": 200,
        "large": 50,
        "odd": 50,
        "bare": 0,
    }


def test_added_preferred_terms_add_to_the_pods():
    added = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [expr("disk", "In", "hdd")]}}
        ]
    }
    ref = ReferenceScheduler(NODES, profile=Profile(node_affinity=NodeAffinityArgs(added)))
    scores = ref.scores(pod())
    assert {n: s["NodeAffinity"] for n, s in scores.items()} == {
        "small": 0,
        "large": 200,
        "odd": 0,
        "bare": 0,
    }


def test_an_unparsable_preferred_term_is_an_error():
    preferred = [{"weight": 1, "preference": {"matchExpressions": [expr("size", "Gt", "x")]}}]
    p = pod(
        affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    )
    with pytest.raises(PodInvalid):
        ReferenceScheduler(NODES).scores(p)


def test_a_multi_valued_metadata_name_in_narrows_but_never_matches():
    # PreFilter takes every listed name; the term itself needs exactly one value, so it
    # is invalid and matches no node (checked against kube-scheduler v1.34).
    p = pod(affinity=required({"matchFields": [expr("metadata.name", "In", "small", "large")]}))
    result = ReferenceScheduler(NODES).schedule(p)
    assert result.message == (
        "0/4 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_a_pin_to_an_unknown_node_leaves_every_node_out():
    p = pod(affinity=required({"matchFields": [expr("metadata.name", "In", "ghost")]}))
    assert ReferenceScheduler(NODES).schedule(p).message == (
        "0/4 nodes are available: 4 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )
