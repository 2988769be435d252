"""firstAvailable requests (DRAPrioritizedList): subrequests tried in order, the first
that leads to a full solution taken, results named "request/subrequest"; constraints and
configs see the subrequest, and PreFilter checks every subrequest's class."""

from kubesalvo.core.dra.allocator import Allocator
from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.pod import prefilter
from kubesalvo.core.dra.selectors import Selectors
from tests.core.dra.helpers import DRIVER, claim, device_class, gpus, request

IS_H100 = f'device.attributes["{DRIVER}"].model == "h100"'
IS_A100 = f'device.attributes["{DRIVER}"].model == "a100"'


def first_available(name: str, *subrequests: dict) -> dict:
    subs = []
    for sub in subrequests:
        subs.append({"name": sub["name"], **sub["exactly"]})
    return {"name": name, "firstAvailable": subs}


def mixed_node(node: str, a100: int, h100: int) -> list[dict]:
    """A node with ``a100`` A100s in one pool and ``h100`` H100s in another."""
    first = gpus(node, count=a100, model="a100")
    second = gpus(node, count=h100, model="h100", start=a100)
    second["metadata"] = {"name": f"{node}-second"}
    second["spec"]["pool"] = {"name": f"{node}-h", "generation": 1, "resourceSliceCount": 1}
    return [first, second]


def allocate(slices, claims, node, held=()):
    objects = DraObjects.of([device_class()], [], slices)
    return Allocator(objects, Selectors(), set(held)).allocate(claims, node, {})


def results(allocation):
    return [(r["request"], r["pool"], r["device"]) for r in allocation["devices"]["results"]]


def test_the_first_subrequest_that_fits_is_taken():
    wanted = claim(
        "c",
        first_available(
            "gpu", request("big", selectors=[IS_H100], count=2), request("small", count=1)
        ),
    )
    (found,) = allocate(mixed_node("a", 4, 2), [wanted], "a")
    assert results(found) == [("gpu/big", "a-h", "gpu-4"), ("gpu/big", "a-h", "gpu-5")]
    # With one H100 held, "big" cannot be met: "small" takes the first free device.
    (found,) = allocate(mixed_node("a", 4, 2), [wanted], "a", held={(DRIVER, "a-h", "gpu-4")})
    assert results(found) == [("gpu/small", "a", "gpu-0")]


def test_no_subrequest_fits_and_the_node_cannot_allocate():
    wanted = claim(
        "c",
        first_available("gpu", request("four", count=4), request("three", count=3)),
    )
    assert allocate([gpus("a", count=2)], [wanted], "a") is None


def test_a_later_request_makes_the_search_come_back_to_the_next_subrequest():
    # "first" can take both A100s, but then "second" (2 A100s) finds none: the search
    # comes back and takes the next subrequest, one H100.
    first = first_available(
        "first", request("a100s", count=2), request("h100", selectors=[IS_H100])
    )
    second = request("second", count=2, selectors=[IS_A100])
    (found,) = allocate(mixed_node("a", 2, 1), [claim("c", first, second)], "a")
    assert results(found) == [
        ("first/h100", "a-h", "gpu-2"),
        ("second", "a", "gpu-0"),
        ("second", "a", "gpu-1"),
    ]


def test_a_constraint_on_the_request_covers_its_subrequests():
    wanted = claim(
        "c",
        first_available("x", request("two", count=2)),
        request("y"),
        constraints=[{"matchAttribute": f"{DRIVER}/model", "requests": ["x", "y"]}],
    )
    (found,) = allocate(mixed_node("a", 3, 1), [wanted], "a")
    assert [r[0] for r in results(found)] == ["x/two", "x/two", "y"]
    assert {r[1] for r in results(found)} == {"a"}  # all three of one model
    sub_only = claim(
        "c",
        first_available("x", request("two", count=2)),
        request("y", selectors=[IS_H100]),
        constraints=[{"matchAttribute": f"{DRIVER}/model", "requests": ["x/two", "y"]}],
    )
    assert allocate(mixed_node("a", 3, 1), [sub_only], "a") is None


def test_class_config_names_the_subrequest_taken():
    cls = device_class()
    cls["spec"]["config"] = [{"opaque": {"driver": DRIVER, "parameters": {"mode": "x"}}}]
    objects = DraObjects.of([cls], [], [gpus("a", count=1)])
    choice = first_available("gpu", request("two", count=2), request("one"))
    wanted = claim("c", choice, request("z"))
    (found,) = Allocator(objects, Selectors(), set()).allocate([wanted], "a", {}) or [None]
    assert found is None  # two devices needed at least, one published
    objects = DraObjects.of([cls], [], [gpus("a", count=3)])
    (found,) = Allocator(objects, Selectors(), set()).allocate([wanted], "a", {})
    assert [r[0] for r in results(found)] == ["gpu/two", "gpu/two", "z"]
    opaque = {"driver": DRIVER, "parameters": {"mode": "x"}}
    assert found["devices"]["config"] == [
        {"source": "FromClass", "requests": ["gpu/two", "z"], "opaque": opaque}
    ]
    # A claim config naming the subrequest taken applies; one naming another does not.
    wanted["spec"]["devices"]["config"] = [
        {"requests": ["gpu/two"], "opaque": opaque},
        {"requests": ["gpu/one"], "opaque": opaque},
    ]
    (found,) = Allocator(objects, Selectors(), set()).allocate([wanted], "a", {})
    assert [c["source"] for c in found["devices"]["config"]] == ["FromClass", "FromClaim"]
    assert found["devices"]["config"][1]["requests"] == ["gpu/two"]


def test_prefilter_rejects_a_subrequest_whose_class_is_missing():
    wanted = claim("c", first_available("gpu", request("one"), request("other", cls="missing")))
    objects = DraObjects.of([device_class()], [wanted], [gpus("a")])
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "p"},
        "spec": {"resourceClaims": [{"name": "c", "resourceClaimName": "c"}]},
    }
    state = prefilter(pod, objects, Selectors(), set(), set())
    assert state.rejection == "request gpu/other: device class missing does not exist"
