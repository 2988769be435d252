"""Filter's count for claims that ask only counts of one class decides as the search does:
on random nodes, slices, held devices and requests, each node passes exactly when the
allocator's search finds an allocation there, and Reserve writes out the search's
allocation for the chosen node."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesalvo.core import _codes
from kubesalvo.core.dra.allocator import Allocator
from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.pod import prefilter
from kubesalvo.core.dra.selectors import Selectors
from tests.core.dra.helpers import DRIVER, claim, device_class, request

IS_A100 = f'device.attributes["{DRIVER}"].model == "a100"'


def node_slice(node: str, models: list[str], flags: list[bool], complete: bool) -> dict[str, Any]:
    devices = []
    for i, (model, bound) in enumerate(zip(models, flags, strict=True)):
        device: dict[str, Any] = {"name": f"gpu-{i}", "attributes": {"model": {"string": model}}}
        if bound:
            device["bindingConditions"] = ["attached"]  # never taken by the allocator
        devices.append(device)
    count = 1 if complete else 2  # an incomplete pool: one slice of two published
    return {
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": count},
            "devices": devices,
        },
    }


node_strategy = st.integers(0, 6).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from(["a100", "h100"]), min_size=n, max_size=n),
        # devices with binding conditions, now and then
        st.lists(st.sampled_from([False, False, False, True]), min_size=n, max_size=n),
        st.sampled_from([True, True, False]),  # the pool complete
        st.lists(st.booleans(), min_size=n, max_size=n),  # held
    )
)


@settings(max_examples=200, deadline=None)
@given(
    nodes=st.lists(node_strategy, min_size=1, max_size=5),
    counts=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    a100_only=st.booleans(),
)
def test_the_count_passes_a_node_exactly_when_the_search_finds_devices(
    nodes: list[tuple[list[str], list[bool], bool, list[bool]]],
    counts: list[int],
    a100_only: bool,
) -> None:
    names = [f"n{i}" for i in range(len(nodes))]
    slices = [
        node_slice(name, models, flags, complete)
        for name, (models, flags, complete, _) in zip(names, nodes, strict=True)
    ]
    held = {
        (DRIVER, name, f"gpu-{i}")
        for name, (_, _, _, taken) in zip(names, nodes, strict=True)
        for i, t in enumerate(taken)
        if t
    }
    classes = [device_class("gpu", IS_A100) if a100_only else device_class("gpu")]
    wanted = claim("c", *(request(f"r{i}", n) for i, n in enumerate(counts)))
    objects = DraObjects.of(classes, [wanted], slices)
    the_pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "p"},
        "spec": {"resourceClaims": [{"name": "c", "resourceClaimName": "c"}]},
    }
    state = prefilter(the_pod, objects, Selectors(), set(held), set())
    assert state.allocator is not None
    assert state.allocator.count_only(state.to_allocate) is not None  # the counted path
    codes = state.filter_rows(names, np.ones(len(names), dtype=bool), lambda row: {})
    oracle = Allocator(objects, Selectors(), set(held))
    for row, name in enumerate(names):
        found = oracle.allocate([wanted], name, {})
        assert codes[row] == (_codes.DRA_ALLOCATE if found is None else 0), name
        if found is not None:
            reserved = state.reserve(name)
            assert reserved.claims == [(wanted, found[0])]


def test_claims_with_selectors_constraints_or_two_classes_are_searched() -> None:
    slices = [node_slice("a", ["a100"] * 4, [False] * 4, True)]
    objects = DraObjects.of([device_class("gpu"), device_class("other")], [], slices)
    alloc = Allocator(objects, Selectors(), set())
    assert alloc.count_only([claim("c", request(count=2))]) is not None
    assert alloc.count_only([claim("c", request(selectors=[IS_A100]))]) is None
    assert alloc.count_only([claim("c", request("a"), request("b", cls="other"))]) is None
    assert alloc.count_only([claim("c", request(mode="All"))]) is None
    constrained = claim("c", request("a"), request("b"), constraints=[{"matchAttribute": "x"}])
    assert alloc.count_only([constrained]) is None
    assert alloc.count_only([claim("c", request()), claim("d", request())]) is None
