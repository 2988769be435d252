"""QosAware's pure parts: args, the SLO annotation, controllers, QOS and TTV, Go durations
and the table's layout."""

from __future__ import annotations

import math

import pytest

from kubesalvo.core.plugins.framework import ArgsError
from kubesalvo.core.plugins.qos_aware import (
    Controller,
    QosAwareArgs,
    Totals,
    controller_of,
    go_duration,
    invalid_slo_note,
    parse_slo,
    render_table,
)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.591, "591ms"),
        (1, "1s"),
        (1.5, "1.5s"),
        (142.541, "2m22.541s"),
        (-142.541, "-2m22.541s"),
        (7446, "2h4m6s"),
        (3600, "1h0m0s"),
        (60, "1m0s"),
        (-0.004, "-4ms"),
        (math.inf, "inf"),
    ],
)
def test_durations_print_as_go_prints_them(seconds, text):
    assert go_duration(seconds) == text


@pytest.mark.parametrize(
    ("raw", "slo", "valid"),
    [
        (None, 0.8, True),
        ("0.9", 0.9, True),
        (" 1 ", 1.0, True),
        ("0", 0.8, False),
        ("1.01", 0.8, False),
        ("-0.5", 0.8, False),
        ("nan", 0.8, False),
        ("lots", 0.8, False),
        ("", 0.8, False),
    ],
)
def test_the_slo_annotation_is_a_number_in_zero_one(raw, slo, valid):
    assert parse_slo(raw, 0.8) == (slo, valid)


def test_the_warning_names_the_value_and_the_default():
    note = invalid_slo_note("lots", 0.8)
    assert "kubesalvo.io/slo='lots'" in note and "0.8" in note


@pytest.mark.parametrize(
    ("field", "value"), [("default_slo", 0.0), ("default_slo", 1.5), ("top_controllers", 0)]
)
def test_args_out_of_range_are_refused_with_their_key(field, value):
    with pytest.raises(ArgsError) as refused:
        QosAwareArgs(**{field: value})
    assert refused.value.problems[0].path == {"default_slo": "defaultSLO"}.get(
        field, "topControllers"
    )


def test_a_pod_leads_to_its_controller():
    rs = [("ReplicaSet", "web-5d8f9c7b6", True)]
    assert controller_of("ns", "web-5d8f9c7b6-x", rs, "5d8f9c7b6") == Controller(
        "ns", "Deployment", "web"
    )
    # A ReplicaSet of its own (no Deployment's naming): the ReplicaSet.
    assert controller_of("ns", "p", [("ReplicaSet", "mine", True)], None).kind == "ReplicaSet"
    assert controller_of("ns", "p", rs, "other").kind == "ReplicaSet"
    # What the runtime knows of owners wins: a CronJob through its Job.
    parent = {("Job", "ns", "nightly-29012"): "nightly"}
    job = controller_of("ns", "p", [("Job", "nightly-29012", True)], None, lambda *k: parent.get(k))
    assert job == Controller("ns", "CronJob", "nightly")
    assert controller_of("ns", "p", [("StatefulSet", "db", True)], None).kind == "StatefulSet"
    # Only the controlling owner counts; none: the pod itself.
    assert controller_of("ns", "p", [("ConfigMap", "c", False)], None) == Controller(
        "ns", "Pod", "p"
    )


def test_qos_is_the_running_share_and_ttv_when_it_falls_below_the_slo():
    # 2 running pods (100 s), 2 waiting (20 s): QOS 100/120, above 0.8.
    t = Totals(slo=0.8, running=100, waiting=20, running_pods=2, waiting_pods=2, pods=4)
    assert t.qos == pytest.approx(100 / 120)
    # Each second adds 2 running and 4 total: (100 + 2d) / (120 + 4d) = 0.8 at d = 4/1.2.
    assert t.ttv == pytest.approx((100 - 0.8 * 120) / (0.8 * 4 - 2))
    assert (100 + 2 * t.ttv) / (120 + 4 * t.ttv) == pytest.approx(0.8)


def test_a_controller_not_losing_ground_never_violates_and_a_violated_one_is_negative():
    assert Totals(slo=0.5, running=10, waiting=1, running_pods=3, waiting_pods=1, pods=4).ttv == (
        math.inf
    )
    behind = Totals(slo=0.9, running=0, waiting=10, waiting_pods=2, pods=2)
    less_behind = Totals(slo=0.5, running=0, waiting=10, waiting_pods=2, pods=2)
    assert behind.ttv == pytest.approx(-4.5) and less_behind.ttv == pytest.approx(-2.5)
    assert behind.ttv < less_behind.ttv  # the stricter SLO is served first
    assert Totals(slo=0.8).qos == 1.0 and Totals(slo=0.8).ttv == math.inf


def test_the_table_has_the_issues_columns_right_aligned():
    rows = [
        (Controller("ns", "Deployment", "web"), Totals(slo=0.9, running=7446, waiting=1, pods=1)),
        (Controller("ns", "Pod", "p"), Totals(slo=0.8, waiting=0.591, waiting_pods=1, pods=1)),
    ]
    lines = render_table(rows).splitlines()
    assert lines[0].split() == ["CONTROLLER", "QOS/SLO", "TTV", "RUNNING", "WAITING", "BINDING"]
    assert lines[1].split()[:2] == ["ns/deployment/web", "1.00/0.90"]
    assert "2h4m6s" in lines[1] and "591ms" in lines[2]
    assert len({len(line) for line in lines}) == 1
