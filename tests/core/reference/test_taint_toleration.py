"""TaintToleration: toleration matching, the filter and the PreferNoSchedule score."""

import pytest

from kubesalvo.core.pernode.framework import tolerates
from kubesalvo.core.plugins import taint_toleration
from kubesalvo.core.reference import ReferenceScheduler

from .builders import node, pod

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"operator": "Exists"}, True),  # empty key with Exists tolerates everything
        ({"key": "", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "dedicated", "operator": "Exists"}, True),
        ({"key": "dedicated", "operator": "Equal", "value": "gpu"}, True),
        ({"key": "dedicated", "value": "gpu"}, True),  # no operator means Equal
        ({"key": "dedicated", "value": "cpu"}, False),
        ({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}, True),
        (
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "PreferNoSchedule"},
            False,
        ),
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": "dedicated", "operator": "Gt", "value": "1"}, False),  # unknown operator
    ],
)
def test_toleration_matching(toleration, expected):
    assert tolerates(toleration, TAINT) is expected


def test_untolerated_no_schedule_and_no_execute_taints_filter_but_prefer_does_not():
    nodes = [
        node("plain"),
        node("noschedule", taints=[TAINT]),
        node("noexecute", taints=[{"key": "k", "effect": "NoExecute"}]),
        node("prefer", taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
    ]
    ref = ReferenceScheduler(nodes)
    assert ref.filter(pod()) == {
        "plain": [],
        "noschedule": [taint_toleration.ERR_REASON_UNTOLERATED_TAINT],
        "noexecute": [taint_toleration.ERR_REASON_UNTOLERATED_TAINT],
        "prefer": [],
    }


def test_a_tolerated_taint_passes_and_the_message_counts_v1_34_text():
    nodes = [node(f"gpu{i}", taints=[TAINT]) for i in range(3)]
    ref = ReferenceScheduler(nodes)
    assert ref.schedule(pod()).message == (
        "0/3 nodes are available: 3 node(s) had untolerated taint(s)."
    )
    tolerant = pod(tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu"}])
    assert ref.schedule(tolerant).node == "gpu0"


def test_score_counts_intolerable_prefer_no_schedule_taints_reversed_and_weighted():
    prefer = {"effect": "PreferNoSchedule"}
    nodes = [
        node("zero"),
        node("one", taints=[{"key": "a", **prefer}]),
        node("two", taints=[{"key": "a", **prefer}, {"key": "b", **prefer}]),
        node("tolerated", taints=[{"key": "c", **prefer}]),
    ]
    # A NoSchedule-only toleration does not count for the score; an effect-less one does.
    p = pod(
        tolerations=[
            {"key": "a", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "c", "operator": "Exists"},
        ]
    )
    scores = ReferenceScheduler(nodes).scores(p)
    assert {n: s["TaintToleration"] for n, s in scores.items()} == {
        "zero": 300,
        "one": 150,
        "two": 0,
        "tolerated": 300,
    }
