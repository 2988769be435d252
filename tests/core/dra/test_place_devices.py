"""A pod with resource claims placed with DynamicResources' Filter: only nodes that can
hold its claims, kube-scheduler's texts when none can, and what Reserve keeps."""

from kubesalvo.core.dra.allocator import allocated_devices
from kubesalvo.core.dra.objects import DraObjects
from kubesalvo.core.dra.pod import prefilter
from kubesalvo.core.dra.selectors import Selectors
from kubesalvo.core.place import plan
from kubesalvo.core.state import ClusterState
from tests.core.dra.helpers import DRIVER, claim, device_class, gpus, request


def node(name, labels=None):
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def cluster(*names):
    state = ClusterState()
    for name in names:
        state.add_node(node(name))
    return state


def pod(name, *claims, uid=""):
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": uid or name, "labels": {}},
        "spec": {
            "containers": [{"name": "c", "image": "app:1"}],
            "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
        },
    }


def devices_for(p, objects, held=None, pending=()):
    if held is None:
        held = allocated_devices(objects.claims.values())
    return prefilter(p, objects, Selectors(), held, set(pending))


def test_the_pod_goes_to_a_node_whose_devices_can_hold_its_claim():
    objects = DraObjects.of([device_class()], [claim("c", request(count=4))], [gpus("b")])
    p = pod("p", "c")
    devices = devices_for(p, objects)
    result = plan(cluster("a", "b"), [p], devices=devices)
    assert result.nodes == ["b"]
    reserved = devices.reserve("b")
    assert reserved.devices == {(DRIVER, "b", f"gpu-{i}") for i in range(4)}
    ((held_claim, allocation),) = reserved.claims
    assert held_claim["metadata"]["name"] == "c"
    assert len(allocation["devices"]["results"]) == 4


def test_no_node_can_hold_it_and_the_message_is_kube_schedulers():
    objects = DraObjects.of(
        [device_class()], [claim("c", request(count=9))], [gpus("a"), gpus("b")]
    )
    result = plan(cluster("a", "b"), [pod("p", "c")], devices=devices_for(pod("p", "c"), objects))
    assert result.nodes == [None]
    assert result.messages[0] == "0/2 nodes are available: 2 cannot allocate all claims."
    assert result.rejectors[0] == {"DynamicResources"}


def test_devices_held_by_earlier_pods_are_not_given_again():
    objects = DraObjects.of(
        [device_class()], [claim("c", request(count=8))], [gpus("a"), gpus("b")]
    )
    held = {(DRIVER, "a", "gpu-3")}
    result = plan(
        cluster("a", "b"), [pod("p", "c")], devices=devices_for(pod("p", "c"), objects, held)
    )
    assert result.nodes == ["b"]


def test_an_allocated_claim_is_usable_only_on_its_node():
    shared = claim("shared", request())
    shared["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": DRIVER, "pool": "b", "device": "gpu-0"}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "first", "uid": "first"}],
    }
    objects = DraObjects.of([device_class()], [shared], [gpus("a"), gpus("b")])
    second = pod("second", "shared")
    devices = devices_for(second, objects)
    result = plan(cluster("a", "b", "c"), [second], devices=devices)
    assert result.nodes == ["b"]
    assert devices.reserve("b").claims[0][1] is None  # nothing new to allocate
    result = plan(cluster("a", "c"), [second], devices=devices_for(second, objects))
    assert result.messages[0] == (
        "0/2 nodes are available: 2 resourceclaim not available on the node."
    )


def test_prefilter_rejections_and_errors_use_upstreams_texts():
    objects = DraObjects.of([device_class()], [claim("c", request(cls="nope"))], [gpus("a")])
    result = plan(cluster("a"), [pod("p", "c")], devices=devices_for(pod("p", "c"), objects))
    assert result.messages[0] == (
        "0/1 nodes are available: request gpu: device class nope does not exist."
    )
    missing = pod("p", "absent")
    result = plan(cluster("a"), [missing], devices=devices_for(missing, objects))
    assert result.messages[0] == (
        '0/1 nodes are available: resourceclaim.resource.k8s.io "absent" not found.'
    )
    templated = pod("t")
    templated["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "tpl"}]
    result = plan(cluster("a"), [templated], devices=devices_for(templated, objects))
    assert result.messages[0] == (
        '0/1 nodes are available: pod "ns/t": ResourceClaim not created yet.'
    )
    bad = DraObjects.of(
        [device_class()], [claim("c", request(selectors=["device.driver =="]))], [gpus("a")]
    )
    result = plan(cluster("a"), [pod("p", "c")], devices=devices_for(pod("p", "c"), bad))
    assert result.nodes == [None]
    assert result.messages[0].startswith(
        'running "DynamicResources" filter plugin: claim ns/c: selector #0: CEL compile error'
    )


def test_a_claim_being_allocated_by_an_earlier_pod_waits():
    objects = DraObjects.of([device_class()], [claim("c", request())], [gpus("a")])
    devices = devices_for(pod("p", "c"), objects, pending={"uid-c"})
    result = plan(cluster("a"), [pod("p", "c")], devices=devices)
    assert result.messages[0] == (
        "0/1 nodes are available: resource claim ns/c is in the process of being allocated."
    )


def test_a_node_whose_search_outlasts_the_filter_timeout_is_rejected_with_upstreams_text():
    # As upstream's own test: a timeout of a nanosecond has passed before the search
    # takes its first step.
    objects = DraObjects.of([device_class()], [claim("c", request())], [gpus("a")])
    held = allocated_devices(objects.claims.values())
    devices = prefilter(pod("p", "c"), objects, Selectors(), held, set(), timeout=1e-9)
    result = plan(cluster("a"), [pod("p", "c")], devices=devices)
    assert result.messages[0] == "0/1 nodes are available: 1 timed out trying to allocate devices."
    # 0 turns the limit off
    devices = prefilter(pod("p", "c"), objects, Selectors(), held, set(), timeout=0)
    assert plan(cluster("a"), [pod("p", "c")], devices=devices).nodes == ["a"]


def test_a_template_claim_must_be_the_pods_own_and_not_being_deleted():
    made = claim("t-gpu", request())
    objects = DraObjects.of([device_class()], [made], [gpus("a")])
    templated = pod("t")
    templated["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "tpl"}]
    templated["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "t-gpu"}]}
    result = plan(cluster("a"), [templated], devices=devices_for(templated, objects))
    assert result.messages[0] == (
        "0/1 nodes are available: ResourceClaim ns/t-gpu was not created for pod ns/t "
        "(pod is not owner)."
    )
    made["metadata"]["ownerReferences"] = [{"uid": "t", "controller": True, "name": "t"}]
    assert plan(cluster("a"), [templated], devices=devices_for(templated, objects)).nodes == ["a"]
    made["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    result = plan(cluster("a"), [templated], devices=devices_for(templated, objects))
    assert result.messages[0] == '0/1 nodes are available: resourceclaim "t-gpu" is being deleted.'


def test_a_template_the_controller_made_no_claim_for_asks_for_nothing():
    objects = DraObjects.of([device_class()], [], [gpus("a")])
    templated = pod("t")
    templated["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "tpl"}]
    templated["status"] = {"resourceClaimStatuses": [{"name": "gpu"}]}
    assert plan(cluster("a"), [templated], devices=devices_for(templated, objects)).nodes == ["a"]


def test_an_allocated_claim_reserved_for_256_others_is_in_use():
    full = claim("full", request())
    full["status"] = {
        "allocation": {"devices": {"results": []}},
        "reservedFor": [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(256)],
    }
    objects = DraObjects.of([device_class()], [full], [gpus("a")])
    result = plan(cluster("a"), [pod("p", "full")], devices=devices_for(pod("p", "full"), objects))
    assert result.messages[0] == "0/1 nodes are available: resourceclaim in use."
