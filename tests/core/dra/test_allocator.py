"""The allocator on hand-made slices: counts, All, selectors, constraints, held devices."""

import pytest

from kubesalvo.core.dra.allocator import AllocationError, Allocator, allocated_devices
from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.selectors import Selectors
from tests.core.dra.helpers import DRIVER, claim, device_class, gpus, request


def allocator(slices, classes=None, held=()):
    objects = DraObjects.of(classes or [device_class()], [], slices)
    return Allocator(objects, Selectors(), set(held))


def devices(result):
    return [r["device"] for r in result["devices"]["results"]]


def test_a_count_takes_that_many_distinct_devices_of_the_node():
    result = allocator([gpus("a"), gpus("b")]).allocate([claim("c", request(count=3))], "b", {})
    assert result is not None
    assert devices(result[0]) == ["gpu-0", "gpu-1", "gpu-2"]
    assert {r["pool"] for r in result[0]["devices"]["results"]} == {"b"}
    assert result[0]["nodeSelector"] == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}
        ]
    }


def test_more_devices_than_the_node_has_cannot_be_allocated():
    assert allocator([gpus("a", count=2)]).allocate([claim("c", request(count=3))], "a", {}) is None


def test_a_node_without_slices_cannot_allocate():
    assert allocator([gpus("a")]).allocate([claim("c", request())], "b", {}) is None


def test_held_devices_are_never_given_again():
    held = {(DRIVER, "a", f"gpu-{i}") for i in range(7)}
    alloc = allocator([gpus("a")], held=held)
    assert devices(alloc.allocate([claim("c", request())], "a", {})[0]) == ["gpu-7"]
    assert alloc.allocate([claim("c", request(count=2))], "a", {}) is None


def test_two_claims_of_one_pod_get_different_devices():
    result = allocator([gpus("a", count=2)]).allocate(
        [claim("c1", request()), claim("c2", request())], "a", {}
    )
    assert [devices(r) for r in result] == [["gpu-0"], ["gpu-1"]]


def test_a_request_selector_filters_on_an_attribute():
    slices = [gpus("a", count=2, model="t4"), {**gpus("a", count=2, model="a100", start=2)}]
    slices[1]["metadata"] = {"name": "second"}
    slices[1]["spec"]["pool"] = {"name": "a2", "generation": 1, "resourceSliceCount": 1}
    selector = f'device.attributes["{DRIVER}"].model == "a100"'
    result = allocator(slices).allocate([claim("c", request(selectors=[selector]))], "a", {})
    assert devices(result[0]) == ["gpu-2"]


def test_the_class_selector_applies_too():
    classes = [device_class("gpu", f'device.attributes["{DRIVER}"].index >= 6')]
    result = allocator([gpus("a")], classes).allocate([claim("c", request(count=2))], "a", {})
    assert devices(result[0]) == ["gpu-6", "gpu-7"]


def test_all_mode_takes_every_matching_device_and_fails_when_one_is_held():
    result = allocator([gpus("a", count=4)]).allocate([claim("c", request(mode="All"))], "a", {})
    assert devices(result[0]) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    held = {(DRIVER, "a", "gpu-2")}
    assert (
        allocator([gpus("a", count=4)], held=held).allocate(
            [claim("c", request(mode="All"))], "a", {}
        )
        is None
    )


def test_match_attribute_across_two_requests_backtracks_to_a_matching_pair():
    a = gpus("a", count=1, model="t4")
    b = gpus("a", count=2, model="a100", start=1)
    b["metadata"] = {"name": "b"}
    b["spec"]["pool"] = {"name": "a-b", "generation": 1, "resourceSliceCount": 1}
    constraint = {"requests": ["one", "two"], "matchAttribute": f"{DRIVER}/model"}
    c = claim("c", request("one"), request("two"), constraints=[constraint])
    result = allocator([a, b]).allocate([c], "a", {})
    assert devices(result[0]) == ["gpu-1", "gpu-2"]


def test_an_incomplete_pool_is_skipped_and_all_mode_refuses_it():
    partial = gpus("a")
    partial["spec"]["pool"]["resourceSliceCount"] = 2
    assert allocator([partial]).allocate([claim("c", request())], "a", {}) is None
    with pytest.raises(AllocationError, match="asks for all devices, but resource pool"):
        allocator([partial]).allocate([claim("c", request(mode="All"))], "a", {})


def test_a_cel_error_is_the_claims_error_not_a_crash():
    bad = request(selectors=["device.driver =="])
    with pytest.raises(AllocationError, match=r"claim ns/c: selector #0: CEL compile error"):
        allocator([gpus("a")]).allocate([claim("c", bad)], "a", {})
    missing = request(selectors=['device.attributes["x.io"].model == "a"'])
    with pytest.raises(AllocationError, match=r"on device gpu.example.com/a/gpu-0: CEL runtime"):
        allocator([gpus("a")]).allocate([claim("c", missing)], "a", {})


def test_pools_with_a_node_selector_or_all_nodes_serve_matching_nodes():
    shared = gpus("x", count=2)
    del shared["spec"]["nodeName"]
    shared["spec"]["nodeSelector"] = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
        ]
    }
    alloc = allocator([shared])
    assert alloc.allocate([claim("c", request())], "n", {"rack": "r2"}) is None
    result = alloc.allocate([claim("c", request())], "n", {"rack": "r1"})
    assert result[0]["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "rack"
    del shared["spec"]["nodeSelector"]
    shared["spec"]["allNodes"] = True
    result = allocator([shared]).allocate([claim("c", request())], "any", {})
    assert "nodeSelector" not in result[0]


def test_allocated_devices_are_read_from_claims_status():
    c = claim("c", request())
    c["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": "a", "device": "gpu-0"},
                    {
                        "request": "gpu",
                        "driver": DRIVER,
                        "pool": "a",
                        "device": "gpu-1",
                        "adminAccess": True,
                    },
                ]
            }
        }
    }
    assert allocated_devices([c]) == {(DRIVER, "a", "gpu-0")}


def test_search_finds_what_allocate_finds_and_writes_it_out_when_called() -> None:
    alloc = allocator([gpus("a", count=3)], held=[(DRIVER, "a", "gpu-0")])
    wanted = [claim("c", request(count=2))]
    found = alloc.search(wanted, "a", {})
    assert found is not None
    assert found() == alloc.allocate(wanted, "a", {})
    assert devices(found()[0]) == ["gpu-1", "gpu-2"]
    assert alloc.search([claim("c", request(count=3))], "a", {}) is None
