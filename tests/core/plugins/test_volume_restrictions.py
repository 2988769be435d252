"""VolumeRestrictions through the encoder: its PreFilter reads every claim first; what it
does not check yet (ReadWriteOncePod, in-tree disks) keeps the pod pending with an error."""

from kubesalvo.core.place import place_burst
from kubesalvo.core.plugins import volume_restrictions as vr
from kubesalvo.core.state import ClusterState
from kubesalvo.core.volumes import CLAIMS, VOLUMES
from tests.helpers.volumes import claim, claim_volume, local_volume


def state_with(*claims):
    state = ClusterState()
    state.add_node(
        {
            "metadata": {"name": "a", "labels": {"kubernetes.io/hostname": "a"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )
    for c in claims:
        state.storage.put(CLAIMS, c)
    state.storage.put(VOLUMES, local_volume("pv"))
    return state


def pod(*volumes):
    spec = {"containers": [{"name": "c"}], "volumes": list(volumes)}
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "p"}, "spec": spec}


def test_a_read_write_once_pod_claim_keeps_the_pod_pending_with_an_error():
    state = state_with(claim("d", volume="pv", modes=("ReadWriteOncePod",)))
    result = place_burst(state, [pod(claim_volume("v", "d"))])
    assert result.nodes == [None]
    assert result.errors[0] == vr.NOT_YET_RWOP.format("d")


def test_an_in_tree_disk_keeps_the_pod_pending_with_an_error():
    disk = {"name": "disk", "gcePersistentDisk": {"pdName": "pd-1"}}
    result = place_burst(state_with(), [pod(disk)])
    assert result.errors[0] == vr.NOT_YET_DISKS.format("disk")


def test_a_read_write_once_claim_and_other_volumes_pass():
    state = state_with(claim("d", volume="pv"))
    empty_dir = {"name": "scratch", "emptyDir": {}}
    assert place_burst(state, [pod(claim_volume("v", "d"), empty_dir)]).nodes == ["a"]
