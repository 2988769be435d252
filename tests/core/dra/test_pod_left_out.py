"""``left_out``: the DRA objects as if a placed pod were not there (explain's question)."""

from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.pod import left_out
from tests.core.dra.helpers import claim, device_class, request


def allocated(name: str, *consumers: str) -> dict:
    made = claim(name, request())
    made["status"] = {
        "allocation": {"devices": {"results": [{"request": "gpu", "device": name}]}},
        "reservedFor": [{"resource": "pods", "name": c, "uid": c} for c in consumers],
    }
    return made


def test_a_claim_only_the_pod_used_is_deallocated_and_a_shared_one_kept_for_the_others():
    objects = DraObjects.of(
        [device_class()],
        [allocated("only", "p"), allocated("shared", "p", "q"), allocated("other", "q")],
        [],
    )
    view = left_out(objects, "p")
    assert view.claims[("ns", "only")]["status"] == {}
    shared = view.claims[("ns", "shared")]["status"]
    assert [r["uid"] for r in shared["reservedFor"]] == ["q"]
    assert shared["allocation"] == objects.claims[("ns", "shared")]["status"]["allocation"]
    assert view.claims[("ns", "other")] is objects.claims[("ns", "other")]
    # the objects themselves are left as they were
    assert [r["uid"] for r in objects.claims[("ns", "only")]["status"]["reservedFor"]] == ["p"]
