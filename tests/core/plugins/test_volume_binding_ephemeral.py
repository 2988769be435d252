"""VolumeBinding for generic ephemeral volumes, in-process: the claim ``<pod>-<volume>``
(named by ``volumes.resolve_ephemeral`` when the pod is read) is bound like any claim,
kube-scheduler's texts while the ephemeral-volume controller has not made it yet or when
the pod does not control it, and two pods of a burst never get one volume."""

from kubesalvo.core.place import place_burst
from kubesalvo.core.state import ClusterState
from kubesalvo.core.volumes import CLAIMS, CLASSES, VOLUMES, resolve_ephemeral
from tests.helpers.volumes import claim, local_volume, storage_class


def node(name):
    allocatable = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    labels = {"kubernetes.io/hostname": name}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable}}


def pod(name):
    template = {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local"}}
    spec = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}],
    }
    return resolve_ephemeral(
        {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": spec}
    )


def owned_claim(pod_name, controller_uid=None):
    uid = controller_uid or f"uid-{pod_name}"
    owner = {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": uid, "controller": True}
    return claim(f"{pod_name}-scratch", metadata={"ownerReferences": [owner]})


def available(pv):
    pv["status"] = {"phase": "Available"}
    return pv


def cluster(claims=(), pvs=()):
    state = ClusterState()
    state.storage.bind_delayed = True
    for name in ("a", "b", "c"):
        state.add_node(node(name))
    state.storage.put(CLASSES, storage_class("local"))
    for kind, objects in ((CLAIMS, claims), (VOLUMES, pvs)):
        for obj in objects:
            state.storage.put(kind, obj)
    return state


def test_resolving_names_the_claim_after_the_pod_and_the_volume():
    volume = pod("web-0")["spec"]["volumes"][0]
    assert volume["ephemeral"] == {
        "claimName": "web-0-scratch",
        "podName": "web-0",
        "podUID": "uid-web-0",
    }


def test_a_pod_without_ephemeral_volumes_is_returned_as_it_is():
    plain = {"metadata": {"name": "p"}, "spec": {"containers": []}}
    assert resolve_ephemeral(plain) is plain


def test_before_the_controller_makes_the_claim_the_pod_waits_with_upstreams_text():
    result = place_burst(cluster(), [pod("web-0")])
    assert result.nodes == [None]
    assert result.messages[0] == (
        "0/3 nodes are available: waiting for ephemeral volume controller to create the "
        'persistentvolumeclaim "web-0-scratch".'
    )
    assert result.prefilter_rejector[0] == "VolumeBinding"


def test_a_claim_of_that_name_the_pod_does_not_control_is_refused_with_upstreams_text():
    state = cluster([owned_claim("web-0", controller_uid="someone-else")])
    result = place_burst(state, [pod("web-0")])
    assert result.nodes == [None]
    assert result.messages[0] == (
        "0/3 nodes are available: PVC ns/web-0-scratch was not created for pod ns/web-0 "
        "(pod is not owner)."
    )


def test_an_owned_claim_is_bound_to_a_local_volume_on_the_pods_node():
    state = cluster([owned_claim("web-0")], [available(local_volume("pv-b", "b"))])
    result = place_burst(state, [pod("web-0")])
    assert result.nodes == ["b"]
    assert result.volume_bindings[0] == [("ns/web-0-scratch", "pv-b")]


def test_two_pods_of_a_burst_never_get_one_volume():
    state = cluster(
        [owned_claim("web-0"), owned_claim("web-1")],
        [available(local_volume("pv-b", "b"))],
    )
    result = place_burst(state, [pod("web-0"), pod("web-1")])
    assert sorted(result.nodes, key=str) == [None, "b"]
    pending = result.nodes.index(None)
    assert "didn't find available persistent volumes to bind" in result.messages[pending]
    assert list(state.storage.assumed) == ["pv-b"]
