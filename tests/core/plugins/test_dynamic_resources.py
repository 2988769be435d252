"""DynamicResources without DRA objects to allocate from (place_burst without ``devices``,
as simulate calls it): pods with claims wait, pods without claims are untouched."""

from kubesalvo.core.place import plan
from kubesalvo.core.plugins import dynamic_resources, names, registry
from kubesalvo.core.plugins.framework import Code
from kubesalvo.core.profile import Profile
from kubesalvo.core.state import ClusterState


def node(name):
    return {
        "metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(name, **spec):
    container = {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": "100m"}}}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": {}},
        "spec": {"containers": [container], **spec},
    }


def cluster(*nodes):
    state = ClusterState()
    for n in nodes:
        state.add_node(n)
    return state


CLAIMS = [{"name": "gpu", "resourceClaimName": "one-gpu"}]


def test_a_pod_with_resource_claims_is_rejected_on_every_node_with_the_plugins_text():
    result = plan(cluster(node("a"), node("b")), [pod("gpu-pod", resourceClaims=CLAIMS)])
    assert result.nodes == [None]
    assert result.messages[0] == (f"0/2 nodes are available: {dynamic_resources.NOT_ALLOCATED}.")
    assert result.rejectors[0] == {names.DYNAMIC_RESOURCES}
    assert result.prefilter_rejector[0] == names.DYNAMIC_RESOURCES


def test_pods_without_claims_in_the_same_burst_are_still_placed():
    result = plan(cluster(node("a")), [pod("plain"), pod("gpu-pod", resourceClaims=CLAIMS)])
    assert result.nodes == ["a", None]


def test_without_the_plugin_a_pod_with_claims_is_placed_as_upstream_does():
    # kube-scheduler with DynamicResources disabled ignores spec.resourceClaims.
    filters = tuple(f for f in registry.DEFAULT_FILTER_ORDER if f != names.DYNAMIC_RESOURCES)
    profile = Profile(filters=filters)
    result = plan(cluster(node("a")), [pod("gpu-pod", resourceClaims=CLAIMS)], profile)
    assert result.nodes == ["a"]


def test_the_rejection_is_unresolvable_so_preemption_cannot_help():
    assert (
        registry.REASON_CODES[dynamic_resources.NOT_ALLOCATED]
        is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    )
