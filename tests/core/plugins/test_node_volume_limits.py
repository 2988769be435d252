"""NodeVolumeLimits: a CSINode's allocatable count per driver, with the unique volumes of
the pods already on the node and of those placed earlier in the burst; no count, no limit."""

from kubesalvo.core.place import place_burst
from kubesalvo.core.plugins.node_volume_limits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED
from kubesalvo.core.state import ClusterState
from kubesalvo.core.volumes import CLAIMS, CLASSES, CSI_NODES, VOLUMES, resolve_ephemeral
from tests.helpers.volumes import claim, claim_volume, csi_node, local_volume, storage_class

DRIVER = "csi.example.com"


def cluster(*csi_nodes, volumes=4):
    state = ClusterState()
    for name in ("a", "b"):
        state.add_node(
            {
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
            }
        )
    for i in range(volumes):
        state.storage.put(CLAIMS, claim(f"d{i}", volume=f"pv{i}"))
        state.storage.put(VOLUMES, local_volume(f"pv{i}", csi_driver=DRIVER))
    state.storage.put(CLASSES, storage_class("csi", "Immediate", provisioner=DRIVER))
    for obj in csi_nodes:
        state.storage.put(CSI_NODES, obj)
    return state


def pod(name, *claims, node=None):
    spec = {
        "containers": [{"name": "c"}],
        "volumes": [claim_volume(f"v{i}", c) for i, c in enumerate(claims)],
    }
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec}


def test_without_an_allocatable_count_every_node_passes():
    state = cluster(csi_node("a", DRIVER, None))
    assert place_burst(state, [pod("p", "d0", "d1", "d2")]).nodes[0] in ("a", "b")


def test_a_pod_with_more_volumes_than_a_node_allows_goes_elsewhere():
    state = cluster(csi_node("a", DRIVER, 1), csi_node("b", DRIVER, 2))
    assert place_burst(state, [pod("p", "d0", "d1")]).nodes == ["b"]
    full = place_burst(state, [pod("q", "d2", "d3")])
    assert full.nodes == [None]
    assert full.messages[0] == f"0/2 nodes are available: 2 {ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED}."


def test_pods_on_the_node_count_and_a_shared_volume_counts_once():
    state = cluster(csi_node("a", DRIVER, 2), csi_node("b", DRIVER, 0))
    state.add_pod(pod("there", "d0", node="a"))
    # d0 is attached already: only d1 is new on a, within the count of 2.
    assert place_burst(state, [pod("p", "d0", "d1")]).nodes == ["a"]
    assert place_burst(state, [pod("q", "d2")]).nodes == [None]


def test_pods_placed_earlier_in_the_burst_count():
    state = cluster(csi_node("a", DRIVER, 1), csi_node("b", DRIVER, 1))
    result = place_burst(state, [pod(f"p{i}", f"d{i}") for i in range(3)])
    assert sorted(n or "-" for n in result.nodes) == ["-", "a", "b"]


def ephemeral_pod(name, node=None):
    """A pod with a generic ephemeral volume, its claim ``<name>-scratch`` bound to a CSI
    volume (as the controller and the binder leave it)."""
    spec = {
        "containers": [{"name": "c"}],
        "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}],
    }
    if node:
        spec["nodeName"] = node
    return resolve_ephemeral(
        {"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec}
    )


def owned(state, pod_name, pv):
    owner = {"kind": "Pod", "name": pod_name, "uid": pod_name, "controller": True}
    state.storage.put(
        CLAIMS, claim(f"{pod_name}-scratch", volume=pv, metadata={"ownerReferences": [owner]})
    )


def test_generic_ephemeral_volumes_count_as_upstream_counts_them():
    state = cluster(csi_node("a", DRIVER, 1), csi_node("b", DRIVER, 0))
    owned(state, "there", "pv0")
    owned(state, "p", "pv1")
    state.add_pod(ephemeral_pod("there", node="a"))
    # a holds its one volume already, b allows none: no room for p's ephemeral volume
    full = place_burst(state, [ephemeral_pod("p")])
    assert full.nodes == [None]
    assert full.messages[0] == f"0/2 nodes are available: 2 {ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED}."
