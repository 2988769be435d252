"""A grouped slot (c_mode 2, _place_grouped) keeps the order of its rows from the class it
held before when the next class reads the same topology keys through the same static
tables (_group_order): the groups depend on those alone, not on the class's requests or
on the pods counted. The classes placed that way must still match the reference, and a
class whose terms read another key (here a hard hostname constraint, with a node that
lacks the hostname label) must not take the order of one that does not."""

from __future__ import annotations

from typing import Any

import pytest

from kubesalvo.core import place
from kubesalvo.core.place import plan
from kubesalvo.core.reference import ReferenceScheduler
from tests.helpers.reference import assert_same_outcomes, kernel_choices, state_of

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


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
