"""VolumeRestrictions through the encoder: its PreFilter reads every claim first; what it
does not check yet (ReadWriteOncePod, in-tree disks) keeps the pod pending with an error."""

from kubesalvo.core.place import place_burst, plan
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


RWOP_TEXT = (
    "0/1 nodes are available: 1 node(s) unavailable due to PersistentVolumeClaim with "
    "ReadWriteOncePod access mode already in-use by another pod."
)


def named(name, *volumes):
    obj = pod(*volumes)
    obj["metadata"].update(name=name, uid=name)
    return obj


def test_a_read_write_once_pod_claim_in_use_on_a_node_fails_every_node():
    state = state_with(claim("d", volume="pv", modes=("ReadWriteOncePod",)))
    holder = named("holder", claim_volume("v", "d"))
    holder["spec"]["nodeName"] = "a"
    state.add_pod(holder)
    result = place_burst(state, [named("second", claim_volume("v", "d"))])
    assert result.nodes == [None]
    assert result.messages[0] == RWOP_TEXT
    assert result.rejectors[0] == {"VolumeRestrictions"}
    state.remove_pod(holder)  # the holder went: the claim is free again
    assert place_burst(state, [named("second", claim_volume("v", "d"))]).nodes == ["a"]


def test_two_pods_of_one_burst_never_share_a_read_write_once_pod_claim():
    state = state_with(claim("d", volume="pv", modes=("ReadWriteOncePod",)))
    burst = [named(f"p{i}", claim_volume("v", "d")) for i in range(3)]
    result = place_burst(state, burst)
    assert result.nodes == ["a", None, None]
    assert result.messages[1] == result.messages[2] == RWOP_TEXT
    planned = plan(state_with(claim("d", volume="pv", modes=("ReadWriteOncePod",))), burst)
    assert planned.nodes == ["a", None, None]


def test_an_in_tree_disk_keeps_the_pod_pending_with_an_error():
    disk = {"name": "disk", "gcePersistentDisk": {"pdName": "pd-1"}}
    result = place_burst(state_with(), [pod(disk)])
    assert result.errors[0] == vr.NOT_YET_DISKS.format("disk")


def test_a_read_write_once_claim_and_other_volumes_pass():
    state = state_with(claim("d", volume="pv"))
    empty_dir = {"name": "scratch", "emptyDir": {}}
    assert place_burst(state, [pod(claim_volume("v", "d"), empty_dir)]).nodes == ["a"]
