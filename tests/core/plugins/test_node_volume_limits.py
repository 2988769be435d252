"""NodeVolumeLimits: pods no CSINode count applies to pass, as upstream; a pod with a
volume of a limited CSI driver stays pending with an error until the count is built."""

from kubesalvo.core.place import place_burst
from kubesalvo.core.plugins import node_volume_limits as nvl
from kubesalvo.core.state import ClusterState
from kubesalvo.core.volumes import CLAIMS, CSI_NODES, VOLUMES
from tests.helpers.volumes import claim, claim_volume, csi_node, local_volume

DRIVER = "csi.example.com"


def cluster(*csi_nodes):
    state = ClusterState()
    for name in ("a", "b"):
        state.add_node(
            {
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
            }
        )
    state.storage.put(CLAIMS, claim("d", volume="pv"))
    state.storage.put(VOLUMES, local_volume("pv", csi_driver=DRIVER))
    for obj in csi_nodes:
        state.storage.put(CSI_NODES, obj)
    return state


def pod(claim_name):
    spec = {"containers": [{"name": "c"}], "volumes": [claim_volume("v", claim_name)]}
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "p"}, "spec": spec}


def test_without_an_allocatable_count_every_node_passes():
    state = cluster(csi_node("a", DRIVER, None))
    assert place_burst(state, [pod("d")]).nodes[0] in ("a", "b")


def test_a_volume_of_a_limited_driver_keeps_the_pod_pending_with_an_error():
    state = cluster(csi_node("b", DRIVER, 1), csi_node("a", "other.example.com", 3))
    result = place_burst(state, [pod("d")])
    assert result.nodes == [None]
    assert result.errors[0] == nvl.NOT_YET.format(DRIVER, "b")
    assert nvl.limited_drivers(state.storage) == {DRIVER: "b", "other.example.com": "a"}
