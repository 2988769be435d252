"""The local scores of a class's only pod (core/_scan.h's vectorised loop) against the
reference, on allocatable and request values chosen to hit its exact-arithmetic edges.

The loop multiplies by 1 / allocatable instead of dividing: LeastAllocated's quotient is
corrected to the exact floor, and a BalancedAllocation result within 1e-9 of an integer
(equal fractions, fractions a representable step apart) is recomputed with divisions, as
are rows with no cpu or memory allocatable and operands too large for exact doubles. Every
pod here is its own class, so each takes that path (with and without spread constraints).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.reference import assert_plan_matches_reference

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _node(name: str, cpu: str, memory: str, pods: str = "110", zone: str = "a") -> dict:
    return {
        "metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: zone}},
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}},
    }


def _pod(i: int, cpu: str | None, memory: str | None, spread: str | None = None) -> dict:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    spec: dict = {
        "containers": [{"name": "c", "image": "app", "resources": {"requests": requests}}]
    }
    if spread is not None:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": spread,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": f"p{i}"}},
            }
        ]
    return {
        "metadata": {"name": f"p{i}", "namespace": "ns", "labels": {"app": f"p{i}"}},
        "spec": spec,
    }


EDGE_FLEET = [
    # cpu and memory fractions equal after the pod: BalancedAllocation exactly 100
    _node("equal", "4", "4Gi"),
    # fractions a representable step apart, and LeastAllocated quotients that are integers
    _node("step", "10", "10Gi"),
    # no cpu allocatable at all (only pods requesting no cpu fit; their scores skip cpu)
    _node("nocpu", "0", "8Gi"),
    # memory so large that (allocatable - used) * 100 is beyond 2**52
    _node("huge", "64", "4Pi"),
    # allocatable below the non-zero defaults (100m, 200Mi) of a pod without requests
    _node("tiny", "50m", "100Mi"),
]


def test_edge_allocatables_score_as_the_reference_without_spread():
    burst = [
        _pod(0, "1", "1Gi"),
        _pod(1, "2", "1Gi"),
        _pod(2, "5", "3Gi"),
        _pod(3, None, None),
        _pod(4, None, "512Mi"),
        _pod(5, "1500m", None),
        _pod(6, "10m", "10Mi"),
    ]
    assert_plan_matches_reference(EDGE_FLEET, burst)


def test_edge_allocatables_score_as_the_reference_with_spread():
    burst = [
        _pod(i, cpu, memory, HOSTNAME if i % 2 else ZONE)
        for i, (cpu, memory) in enumerate(
            [
                ("1", "1Gi"),
                ("2", "1Gi"),
                ("5", "3Gi"),
                (None, None),
                (None, "512Mi"),
                ("1500m", None),
            ]
        )
    ]
    assert_plan_matches_reference(EDGE_FLEET, burst)


MEMORY_UNITS = ("", "Ki", "Mi", "Gi", "Ti", "Pi")
# Up to 10Pi a node: (allocatable - used) * 100 stays within int64, as kube-scheduler's
# own arithmetic needs, while passing 2**52 (where the loop defers to the divisions).
MEMORY = st.one_of(
    st.tuples(st.integers(0, 4096), st.sampled_from(MEMORY_UNITS[:5])),
    st.tuples(st.integers(0, 10), st.just("Pi")),
).map(lambda t: f"{t[0]}{t[1]}")


@st.composite
def fleets_and_bursts(draw):
    fleet = [
        _node(
            f"n{i}",
            f"{draw(st.integers(0, 200_000))}m",
            draw(MEMORY),
            str(draw(st.integers(1, 20))),
            draw(st.sampled_from("abc")),
        )
        for i in range(draw(st.integers(1, 6)))
    ]
    burst = [
        _pod(
            i,
            draw(st.one_of(st.none(), st.integers(0, 20_000).map(lambda v: f"{v}m"))),
            draw(
                st.one_of(
                    st.none(),
                    st.tuples(st.integers(0, 2048), st.sampled_from(MEMORY_UNITS[:4])).map(
                        lambda t: f"{t[0]}{t[1]}"
                    ),
                )
            ),
            draw(st.sampled_from((None, HOSTNAME, ZONE))),
        )
        for i in range(draw(st.integers(1, 8)))
    ]
    return fleet, burst


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets_and_bursts())
def test_random_allocatables_and_requests_score_as_the_reference(case):
    fleet, burst = case
    assert_plan_matches_reference(fleet, burst)
