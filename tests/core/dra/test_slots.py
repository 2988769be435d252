"""Runs of claiming pods placed as one segment, their free devices counted per node, land
where one pod at a time would: on random nodes (free devices, held ones, cpu), pods
with template claims asking counts of one class (some with a selector, placed alone),
the counted path and the one-pod path give the same nodes and the same devices under
the same tie stream, and no device is given twice."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesalvo.core.dra.allocator import DeviceId
from kubesalvo.core.dra.claiming import place_claiming
from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.pod import prefilter
from kubesalvo.core.dra.selectors import Selectors
from kubesalvo.core.dra.slots import countable_run
from kubesalvo.core.place import place_burst
from kubesalvo.core.state import ClusterState
from kubesalvo.core.ties import TieBreak
from tests.core.dra.helpers import DRIVER, claim, device_class, gpus, request

IS_A100 = f'device.attributes["{DRIVER}"].model == "a100"'


def node(name: str, cpu: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "32Gi", "pods": "110"}},
    }


def templated(name: str, requests: list[dict[str, Any]], cpu: str) -> tuple[dict, dict]:
    """A pod with one claim from a template, and the claim the controller made for it."""
    pod = {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": {}},
        "spec": {
            "containers": [
                {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": cpu}}}
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "tpl"}],
        },
        "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}]},
    }
    made = claim(f"{name}-gpu", *requests)
    made["metadata"]["ownerReferences"] = [{"uid": name, "controller": True, "name": name}]
    return pod, made


def cluster(cpus: list[int]) -> ClusterState:
    state = ClusterState()
    for i, cpu in enumerate(cpus):
        state.add_node(node(f"n{i}", cpu))
    return state


def one_at_a_time(pods, objects, held, cpus, seed):
    state, ties, selectors = cluster(cpus), TieBreak(seed), Selectors()
    held = set(held)
    placed: list[tuple[str | None, frozenset[DeviceId]]] = []
    for pod in pods:
        devices = prefilter(pod, objects, selectors, held, set())
        result = place_burst(state, [pod], devices=devices, ties=ties)
        taken: frozenset[DeviceId] = frozenset()
        if result.nodes[0] is not None:
            taken = devices.reserve(result.nodes[0]).devices
            held |= taken
        placed.append((result.nodes[0], taken))
    return placed


def counted(pods, objects, held, cpus, seed):
    """place_claiming's counted runs; also the sizes of the placements of many pods."""
    state, ties = cluster(cpus), TieBreak(seed)
    segments = []

    def place(state, segment, profile, **kwargs):
        if len(segment) > 1:
            segments.append(len(segment))
        return place_burst(state, segment, profile, **kwargs)

    result, reserved = place_claiming(
        place, state, pods, None, objects, Selectors(), set(held), ties
    )
    assert result.nodes == [None if r is None else r.node for r in reserved]
    placed = [(r.node, r.devices) if r is not None else (None, frozenset()) for r in reserved]
    return placed, segments


node_strategy = st.tuples(
    st.integers(0, 6),  # GPUs published
    st.lists(st.booleans(), min_size=6, max_size=6),  # held ones
    st.sampled_from([1, 2, 8]),  # cpu
)


@settings(max_examples=120, deadline=None)
@given(
    nodes=st.lists(node_strategy, min_size=1, max_size=6),
    counts=st.lists(st.integers(1, 3), min_size=1, max_size=14),
    selected=st.lists(st.booleans(), min_size=14, max_size=14),
    cpus=st.lists(st.sampled_from(["0", "500m", "1"]), min_size=14, max_size=14),
    seed=st.integers(0, 2**32),
)
def test_counted_runs_place_and_reserve_as_one_pod_at_a_time(
    nodes, counts, selected, cpus, seed
) -> None:
    slices = [gpus(f"n{i}", count) for i, (count, _, _) in enumerate(nodes) if count]
    held = {
        (DRIVER, f"n{i}", f"gpu-{d}")
        for i, (count, taken, _) in enumerate(nodes)
        for d in range(count)
        if taken[d] and d % 3 == 0
    }
    pods, claims = [], []
    for k, count in enumerate(counts):
        # now and then a request with a selector: that pod is placed alone
        selectors = [IS_A100] if selected[k] and k % 4 == 3 else []
        pod, made = templated(f"p{k}", [request(count=count, selectors=selectors)], cpus[k])
        pods.append(pod)
        claims.append(made)
    objects = DraObjects.of([device_class()], claims, slices)
    cpu = [c for _, _, c in nodes]
    expected = one_at_a_time(pods, objects, held, cpu, seed)
    got, _ = counted(pods, objects, held, cpu, seed)
    assert got == expected
    taken = [d for _, devices in got for d in devices]
    assert len(taken) == len(set(taken))
    assert not set(taken) & held


def test_a_burst_of_alike_pods_is_one_run_and_stops_where_devices_run_out() -> None:
    slices = [gpus("n0", 4), gpus("n1", 4)]
    pods, claims = [], []
    for k in range(10):
        pod, made = templated(f"p{k}", [request(count=1)], "0")
        pods.append(pod)
        claims.append(made)
    objects = DraObjects.of([device_class()], claims, slices)
    got, runs = counted(pods, objects, set(), [8, 8], 7)
    assert got == one_at_a_time(pods, objects, set(), [8, 8], 7)
    # The ten as one segment, cut at the ninth: the eight placed again from the rewound
    # tie stream, then the two others alone.
    assert runs == [10, 8]
    assert [n for n, _ in got].count(None) == 2
    assert len({d for _, devices in got for d in devices}) == 8


def test_pods_sharing_a_named_claim_are_not_counted_together() -> None:
    shared = claim("shared", request(count=2))
    objects = DraObjects.of([device_class()], [shared], [gpus("n0", 4)])
    pods = [
        {
            "metadata": {"name": f"p{k}", "namespace": "ns", "uid": f"p{k}"},
            "spec": {
                "containers": [{"name": "c", "image": "app:1"}],
                "resourceClaims": [{"name": "c", "resourceClaimName": "shared"}],
            },
        }
        for k in range(2)
    ]
    run = countable_run(pods, objects, Selectors(), set(), set(), 10)
    assert len(run) == 1
