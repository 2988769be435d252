"""VolumeRestrictions through the encoder: its PreFilter reads every claim first; claims
in ReadWriteOncePod use and in-tree disks that conflict on a node fail the pod."""

from kubesalvo.core.place import place_burst, plan
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


DISK_TEXT = "0/2 nodes are available: 2 node(s) had no available disk."


def two_nodes():
    state = state_with()
    state.add_node(
        {
            "metadata": {"name": "b", "labels": {"kubernetes.io/hostname": "b"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )
    return state


def on_node(state, name, node, *volumes):
    holder = named(name, *volumes)
    holder["spec"]["nodeName"] = node
    state.add_pod(holder)
    return holder


def gce(pd, read_only=False):
    return {"name": "disk", "gcePersistentDisk": {"pdName": pd, "readOnly": read_only}}


def test_a_gce_disk_mounted_on_a_node_keeps_a_second_writer_off_that_node():
    state = two_nodes()
    holder = on_node(state, "holder", "a", gce("pd-1"))
    result = place_burst(state, [named("second", gce("pd-1"))])
    assert result.nodes == ["b"]
    on_node(state, "other", "b", gce("pd-1", read_only=True))
    result = place_burst(state, [named("second", gce("pd-1", read_only=True))])
    assert result.nodes == [None]  # read-only beside a writer on a, beside a reader on b...
    assert result.messages[0] == DISK_TEXT
    assert result.rejectors[0] == {"VolumeRestrictions"}
    state.remove_pod(holder)  # ...is fine once only readers are left
    assert place_burst(state, [named("second", gce("pd-1", read_only=True))]).nodes[0] in "ab"


def test_another_gce_disk_does_not_conflict():
    state = two_nodes()
    on_node(state, "holder", "a", gce("pd-1"))
    on_node(state, "other", "b", gce("pd-1"))
    assert place_burst(state, [named("second", gce("pd-2"))]).nodes[0] in ("a", "b")


def test_an_ebs_volume_conflicts_even_read_only():
    ebs = {"name": "ebs", "awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": True}}
    state = two_nodes()
    on_node(state, "holder", "a", ebs)
    assert place_burst(state, [named("second", ebs)]).nodes == ["b"]


def test_iscsi_targets_conflict_by_iqn_unless_both_read_only():
    def iscsi(iqn, read_only):
        source = {"targetPortal": "127.0.0.1:3260", "iqn": iqn, "lun": 0, "readOnly": read_only}
        return {"name": "iscsi", "iscsi": source}

    state = two_nodes()
    on_node(state, "holder", "a", iscsi("iqn.2026-01.io:t", True))
    assert place_burst(state, [named("w", iscsi("iqn.2026-01.io:t", False))]).nodes == ["b"]
    readers = place_burst(state, [named("r", iscsi("iqn.2026-01.io:t", True))], commit=False)
    assert readers.nodes[0] in ("a", "b")


def test_rbd_images_conflict_on_an_overlapping_monitor_same_pool_and_image():
    def rbd(monitors, image, pool=None):
        source = {"monitors": list(monitors), "image": image}
        if pool is not None:
            source["pool"] = pool
        return {"name": "rbd", "rbd": source}

    state = two_nodes()
    on_node(state, "holder", "a", rbd(["m1", "m2"], "img"))
    # the default pool is "rbd", as the API server fills it in
    assert place_burst(state, [named("s", rbd(["m2"], "img", "rbd"))], commit=False).nodes == ["b"]
    other_monitor = place_burst(state, [named("s", rbd(["m3"], "img"))], commit=False)
    other_pool = place_burst(state, [named("s", rbd(["m1"], "img", "p2"))], commit=False)
    assert {other_monitor.nodes[0], other_pool.nodes[0]} <= {"a", "b"}


def test_pods_of_one_burst_never_mount_one_disk_on_one_node():
    state = state_with()  # one node
    burst = [named(f"p{i}", gce("pd-1")) for i in range(3)]
    result = place_burst(state, burst)
    assert result.nodes == ["a", None, None]
    assert result.messages[1] == "0/1 nodes are available: 1 node(s) had no available disk."
    assert plan(state_with(), burst).nodes == ["a", None, None]


def test_a_read_write_once_claim_and_other_volumes_pass():
    state = state_with(claim("d", volume="pv"))
    empty_dir = {"name": "scratch", "emptyDir": {}}
    assert place_burst(state, [pod(claim_volume("v", "d"), empty_dir)]).nodes == ["a"]
