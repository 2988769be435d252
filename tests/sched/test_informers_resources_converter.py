"""The DRA snapshot converts only what changed: an object still in the informer's store
gives the same plain dict as before, a replaced one a new dict, a removed one is
forgotten."""

from __future__ import annotations

import msgspec

from kubesalvo.sched.informers.resources import DraConverter, ResourceClaim, ResourceSlice


def slice_(node: str, rv: str) -> ResourceSlice:
    raw = {
        "metadata": {"name": f"{node}-gpu", "uid": f"u-{node}", "resourceVersion": rv},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}],
        },
    }
    return msgspec.convert(raw, ResourceSlice)


def claim(name: str, rv: str, allocated: bool = False) -> ResourceClaim:
    status = {"allocation": {"devices": {"results": []}}} if allocated else {}
    raw = {
        "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": rv},
        "spec": {"devices": {"requests": []}},
        "status": status,
    }
    return msgspec.convert(raw, ResourceClaim)


def test_unchanged_objects_keep_their_dicts_replaced_ones_convert_anew() -> None:
    convert = DraConverter()
    a, b = slice_("a", "1"), slice_("b", "1")
    c = claim("c", "1")
    first = convert([], [c], [a, b])
    c2 = claim("c", "2", allocated=True)
    b2 = slice_("b", "2")
    second = convert([], [c2], [a, b2])
    assert (
        second.pools[("gpu.example.com", "a")].slices[0]
        is (first.pools[("gpu.example.com", "a")].slices[0])
    )
    assert second.pools[("gpu.example.com", "b")].slices[0]["metadata"]["resourceVersion"] == "2"
    assert second.claims[("ns", "c")]["status"]["allocation"] == {"devices": {"results": []}}
    assert "allocation" not in first.claims[("ns", "c")].get("status", {})


def test_objects_gone_from_the_stores_are_forgotten() -> None:
    convert = DraConverter()
    a, b = slice_("a", "1"), slice_("b", "1")
    convert([], [], [a, b])
    assert set(convert([], [], [a]).pools) == {("gpu.example.com", "a")}
    assert len(convert._done) == 1
