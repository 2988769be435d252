"""A grouped slot (c_mode 2, _place_grouped) keeps the order of its rows from the class it
held before when the next class reads the same topology keys through the same static
tables (_group_order): the groups depend on those alone, not on the class's requests or
on the pods counted. The classes placed that way must still match the reference, and a
class whose terms read another key (here a hard hostname constraint, with a node that
lacks the hostname label) must not take the order of one that does not."""

from __future__ import annotations

from typing import Any

import pytest

from kubesalvo.core import _place, place
from kubesalvo.core.place import plan
from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.ties import TieBreak
from tests.helpers.reference import assert_same_outcomes, kernel_choices, state_of

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"


def fleet(count: int, without_hostname: int | None = None) -> list[dict[str, Any]]:
    nodes = []
    for i in range(count):
        labels = {ZONE: f"z{i % 3}", HOST: f"n{i:02d}"}
        if i == without_hostname:
            del labels[HOST]
        cpu = "4" if i % 2 else "8"
        nodes.append(
            {
                "metadata": {"name": f"n{i:02d}", "labels": labels},
                "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
            }
        )
    return nodes


def spread(app: str, key: str, when: str) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": app}},
    }


def pod(name: str, app: str, cpu: str, constraints: list[dict[str, Any]]) -> dict[str, Any]:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": app}},
        "spec": {"containers": [container], "topologySpreadConstraints": constraints},
    }


def planned(nodes, burst, monkeypatch):
    kernels: list[Any] = []
    kernel_class = place.BurstKernel

    def recorded(*args: Any) -> Any:
        kernels.append(kernel_class(*args))
        return kernels[-1]

    monkeypatch.setattr(place, "BurstKernel", recorded)
    result = plan(state_of(nodes), burst)
    expected = ReferenceScheduler(nodes).place_burst(burst, choose=kernel_choices(result, burst))
    assert_same_outcomes(result, expected)
    return result, kernels


@pytest.mark.parametrize(
    ("zone_when", "host_when"),
    [("DoNotSchedule", "ScheduleAnyway"), ("ScheduleAnyway", "DoNotSchedule")],
)
def test_classes_spread_on_one_zone_key_reuse_the_order_and_match_the_reference(
    zone_when, host_when, monkeypatch
):
    nodes = fleet(12)
    # Deployments one after the other, each with its own selector and requests: their
    # constraints read the same keys through the same (empty) static filters.
    burst = [
        pod(f"{app}-{k}", app, cpu, [spread(app, ZONE, zone_when), spread(app, HOST, host_when)])
        for app, cpu in (("a", "500m"), ("b", "1"), ("c", "250m"), ("d", "2"))
        for k in range(7)
    ]
    result, kernels = planned(nodes, burst, monkeypatch)
    assert result.placed == len(burst)
    assert sum(k.grouped_pods for k in kernels) > 0
    assert sum(k.orders_reused for k in kernels) >= 3


def test_a_class_reading_another_key_does_not_take_the_order(monkeypatch):
    nodes = fleet(12, without_hostname=4)
    zone_only = [pod(f"a-{k}", "a", "500m", [spread("a", ZONE, "DoNotSchedule")]) for k in range(6)]
    with_host = [
        pod(
            f"b-{k}",
            "b",
            "500m",
            [spread("b", ZONE, "DoNotSchedule"), spread("b", HOST, "DoNotSchedule")],
        )
        for k in range(12)
    ]
    result, kernels = planned(nodes, zone_only + with_host, monkeypatch)
    assert sum(k.grouped_pods for k in kernels) >= len(zone_only)  # a's slot was grouped
    # b's hard hostname constraint rules out the node without the label: b cannot be
    # placed by group, and must not take a's order (same zone key, same tables).
    assert "n04" not in result.nodes[len(zone_only) :]
    assert sum(k.orders_reused for k in kernels) == 0


def alternating(rounds: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes with a zone, a rack and (but one) a hostname label; deployments that alternate
    between a zone constraint, a rack constraint (other groups, another order) and a zone
    plus a hard hostname constraint (that set cannot be placed by group). The second
    round's zone class fits only the 8-cpu nodes (the even ones: racks r0 and r2), so the
    groups it finds feasible are not the rack groups'."""
    nodes = fleet(12, without_hostname=4)
    for i, n in enumerate(nodes):
        n["metadata"]["labels"][RACK] = f"r{i % 4}"
    burst: list[dict[str, Any]] = []
    for round_ in range(rounds):
        small = ("500m", "250m", "1", "300m")[round_]
        for name, cpu, terms in (
            ("a", "4500m" if round_ == 1 else small, [spread("a", ZONE, "DoNotSchedule")]),
            ("b", small, [spread("b", RACK, "DoNotSchedule")]),
            (
                "c",
                small,
                [spread("c", ZONE, "ScheduleAnyway"), spread("c", HOST, "DoNotSchedule")],
            ),
        ):
            app = f"{name}{round_}"
            for t in terms:
                t["labelSelector"]["matchLabels"]["app"] = app
            burst += [pod(f"{app}-{k}", app, cpu, terms) for k in range(5)]
    return nodes, burst


def test_classes_alternating_key_sets_copy_the_orders_kept_per_signature(monkeypatch):
    """Each signature's checks and order are computed once, then copied into whichever
    slot the next class of that signature takes, the refusal included."""
    nodes, burst = alternating(3)
    result, kernels = planned(nodes, burst, monkeypatch)
    assert result.placed == len(burst)
    assert sum(k.grouped_pods for k in kernels) >= 30  # the a and b classes, by group
    # past the first round: the classes whose slot last held another set copy theirs
    assert sum(k.orders_copied for k in kernels) >= 4
    for i, name in enumerate(result.nodes):
        if burst[i]["metadata"]["labels"]["app"].startswith("c"):
            assert name != "n04"


@pytest.mark.parametrize("seed", range(4))
def test_copied_orders_place_as_orders_computed_afresh(seed, monkeypatch):
    """The same burst with the orders kept per signature and computed for every class:
    the same nodes, scores and tie counts, ties drawn alike."""
    nodes, burst = alternating(4)
    runs = []
    for cache in (False, True):
        before = _place.set_order_cache(cache)
        try:
            runs.append(plan(state_of(nodes), burst, ties=TieBreak(seed)))
        finally:
            _place.set_order_cache(before)
    off, on = runs
    assert on.nodes == off.nodes
    assert list(on.scores) == list(off.scores)
    assert list(on.ties) == list(off.ties)
    assert max(off.ties) > 1
