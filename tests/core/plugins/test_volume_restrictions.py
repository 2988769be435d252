"""VolumeRestrictions through the encoder: its PreFilter reads every claim first; a
ReadWriteOncePod claim in use fails every node; an in-tree disk another pod of the node
holds fails that node, with upstream's read-only rules per disk kind."""

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


def two_nodes():
    state = state_with()
    state.add_node(
        {
            "metadata": {"name": "b", "labels": {"kubernetes.io/hostname": "b"}},
            "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "110"}},
        }
    )
    return state


def disk_pod(name, source, node=None, **fields):
    obj = named(name, {"name": "disk", source: fields})
    if node:
        obj["spec"]["nodeName"] = node
    return obj


GCE = ("gcePersistentDisk", {"pdName": "pd-1"})
EBS = ("awsElasticBlockStore", {"volumeID": "vol-1"})
ISCSI = ("iscsi", {"iqn": "iqn.2026-11.io.example:disk", "lun": 0, "targetPortal": "t:3260"})
RBD = ("rbd", {"monitors": ["m1", "m2"], "image": "img", "pool": "rbd"})


def conflicts(one, other):
    """Whether a pod with disk ``one`` is kept off node a, where a pod holds ``other``."""
    state = state_with()
    state.add_pod(disk_pod("holder", other[0], node="a", **other[1]))
    result = place_burst(state, [disk_pod("p", one[0], **one[1])])
    if result.nodes == ["a"]:
        return False
    assert result.messages[0] == "0/1 nodes are available: 1 node(s) had no available disk."
    assert result.rejectors[0] == {"VolumeRestrictions"}
    return True


def read_only(kind):
    return (kind[0], {**kind[1], "readOnly": True})


def test_the_same_disk_on_a_node_conflicts_unless_every_mount_is_read_only():
    for kind in (GCE, ISCSI, RBD):
        assert conflicts(kind, kind), kind[0]
        assert conflicts(read_only(kind), kind), kind[0]
        assert not conflicts(read_only(kind), read_only(kind)), kind[0]


def test_an_ebs_volume_conflicts_even_read_only():
    assert conflicts(read_only(EBS), read_only(EBS))


def test_other_disks_do_not_conflict():
    assert not conflicts(("gcePersistentDisk", {"pdName": "pd-2"}), GCE)
    assert not conflicts(("awsElasticBlockStore", {"volumeID": "vol-2"}), EBS)
    assert not conflicts(("iscsi", {**ISCSI[1], "iqn": "iqn.other"}), ISCSI)
    assert not conflicts(GCE, EBS)


def test_rbd_images_are_the_same_with_one_monitor_in_common_and_the_default_pool():
    assert conflicts(("rbd", {"monitors": ["m2", "m3"], "image": "img"}), RBD)
    assert not conflicts(("rbd", {"monitors": ["m3"], "image": "img", "pool": "rbd"}), RBD)
    assert not conflicts(("rbd", {**RBD[1], "pool": "other"}), RBD)
    assert not conflicts(("rbd", {**RBD[1], "image": "other"}), RBD)


def test_two_pods_of_one_burst_with_one_disk_go_to_different_nodes():
    state = two_nodes()
    burst = [disk_pod(f"p{i}", GCE[0], **GCE[1]) for i in range(3)]
    result = place_burst(state, burst)
    assert sorted(result.nodes[:2]) == ["a", "b"]
    assert result.nodes[2] is None
    assert result.messages[2] == "0/2 nodes are available: 2 node(s) had no available disk."
    assert vr.disks_conflict(
        {"gcePersistentDisk": {"pdName": "x"}}, {"gcePersistentDisk": {"pdName": "x"}}
    )


def test_a_read_write_once_claim_and_other_volumes_pass():
    state = state_with(claim("d", volume="pv"))
    empty_dir = {"name": "scratch", "emptyDir": {}}
    assert place_burst(state, [pod(claim_volume("v", "d"), empty_dir)]).nodes == ["a"]


def test_a_disk_is_free_again_once_its_holder_is_gone():
    state = state_with()
    holder = disk_pod("holder", GCE[0], node="a", **GCE[1])
    state.add_pod(holder)
    assert place_burst(state, [disk_pod("p", GCE[0], **GCE[1])]).nodes == [None]
    state.remove_pod(holder)
    assert place_burst(state, [disk_pod("p", GCE[0], **GCE[1])]).nodes == ["a"]
