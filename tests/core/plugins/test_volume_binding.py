"""VolumeBinding through the encoder's class filter and the kernel: the PreFilter's
rejections with kube-scheduler's texts, bound volumes' node affinity as a node mask, and
the claims it does not bind yet failing with an error instead of a wrong node."""

from kubesalvo.core.place import place_burst
from kubesalvo.core.plugins import registry
from kubesalvo.core.plugins import volume_binding as vb
from kubesalvo.core.profile import Profile
from kubesalvo.core.state import ClusterState
from kubesalvo.core.volumes import CLAIMS, CLASSES, VOLUMES
from tests.helpers.volumes import (
    claim,
    claim_volume,
    local_volume,
    storage_class,
)


def node(name, cpu="4", zone=None):
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    allocatable = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable}}


def pod(name, *claims, cpu="1"):
    container = {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}
    spec = {"containers": [container]}
    if claims:
        spec["volumes"] = [claim_volume(f"v{i}", c) for i, c in enumerate(claims)]
    return {"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec}


def cluster(nodes, *, claims=(), volumes=(), classes=()):
    state = ClusterState()
    for n in nodes:
        state.add_node(n)
    for kind, objects in ((CLAIMS, claims), (VOLUMES, volumes), (CLASSES, classes)):
        for obj in objects:
            state.storage.put(kind, obj)
    return state


NODES = [node("a", cpu="8"), node("b"), node("c")]


def test_a_pod_whose_claim_does_not_exist_stays_pending_with_the_not_found_text():
    result = place_burst(cluster(NODES), [pod("p", "data")])
    assert result.nodes == [None]
    assert result.messages[0] == '0/3 nodes are available: persistentvolumeclaim "data" not found.'
    # VolumeRestrictions' PreFilter runs first in the default order and reads claims too.
    assert result.prefilter_rejector[0] == "VolumeRestrictions"


def test_without_volume_restrictions_volume_binding_gives_the_same_rejection():
    filters = tuple(f for f in registry.DEFAULT_FILTER_ORDER if f != "VolumeRestrictions")
    result = place_burst(cluster(NODES), [pod("p", "data")], Profile(filters=filters))
    assert result.prefilter_rejector[0] == "VolumeBinding"
    assert result.messages[0].endswith('persistentvolumeclaim "data" not found.')


def test_a_pod_bound_to_a_local_volume_goes_to_that_volumes_node_not_the_roomiest():
    state = cluster(
        NODES,
        claims=[claim("data", volume="pv-b")],
        volumes=[local_volume("pv-b", "b")],
        classes=[storage_class("local")],
    )
    result = place_burst(state, [pod("p", "data"), pod("q")])
    assert result.nodes == ["b", "a"]  # q, without volumes, takes the roomiest node


def test_when_the_volumes_node_is_full_the_message_counts_the_affinity_conflicts():
    state = cluster(
        NODES,
        claims=[claim("data", volume="pv-b")],
        volumes=[local_volume("pv-b", "b")],
        classes=[storage_class("local")],
    )
    result = place_burst(state, [pod("p", "data", cpu="5")])
    assert result.nodes == [None]
    # NodeResourcesFit filters before VolumeBinding: c, failing both, counts for cpu.
    assert result.messages[0] == (
        "0/3 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity, "
        "2 Insufficient cpu."
    )
    assert result.rejectors[0] == {"NodeResourcesFit", "VolumeBinding"}


def without_volume_zone():
    return Profile(filters=tuple(f for f in registry.DEFAULT_FILTER_ORDER if f != "VolumeZone"))


def test_a_claim_bound_to_a_missing_volume_fails_at_volume_zones_prefilter_first():
    # Every PreFilter runs before any Filter: VolumeZone's reads the volume and rejects.
    state = cluster(NODES, claims=[claim("data", volume="gone")])
    result = place_burst(state, [pod("p", "data")])
    assert result.messages[0] == '0/3 nodes are available: persistentvolume "gone" not found.'
    assert result.prefilter_rejector[0] == "VolumeZone"


def test_without_volume_zone_a_claim_bound_to_a_missing_volume_fails_every_node():
    state = cluster(NODES, claims=[claim("data", volume="gone")])
    result = place_burst(state, [pod("p", "data")], without_volume_zone())
    assert result.messages[0] == (
        "0/3 nodes are available: 3 node(s) unavailable due to one or more pvc(s) bound to "
        "non-existent pv(s)."
    )


def test_the_first_claim_in_the_pods_order_decides_each_node():
    state = cluster(
        NODES,
        claims=[claim("one", volume="pv-a"), claim("two", volume="gone")],
        volumes=[local_volume("pv-a", "a")],
    )
    result = place_burst(state, [pod("p", "one", "two")], without_volume_zone())
    assert result.messages[0] == (
        "0/3 nodes are available: 1 node(s) unavailable due to one or more pvc(s) bound to "
        "non-existent pv(s), 2 node(s) didn't match PersistentVolume's node affinity."
    )


def test_a_volume_without_node_affinity_admits_every_node():
    state = cluster(NODES, claims=[claim("data", volume="nfs")], volumes=[local_volume("nfs")])
    assert place_burst(state, [pod("p", "data")]).nodes == ["a"]


def test_unbound_immediate_claims_and_prebound_claims_reject_the_pod_at_prefilter():
    for unbound in (
        claim("data", class_name="fast"),  # an Immediate class
        claim("data", class_name=None),  # no class at all
        claim("data", volume="pv-a", bound=False),  # prebound, the controller not done
    ):
        state = cluster(NODES, claims=[unbound], classes=[storage_class("fast", mode="Immediate")])
        result = place_burst(state, [pod("p", "data")])
        assert result.messages[0] == (
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        )
        assert result.prefilter_rejector[0] == "VolumeBinding"


def test_lost_and_terminating_claims_are_rejected_with_upstreams_texts():
    lost = claim("data", volume="pv-x", status={"phase": "Lost"})
    result = place_burst(cluster(NODES, claims=[lost]), [pod("p", "data")])
    assert result.messages[0].endswith(
        'persistentvolumeclaim "data" bound to non-existent persistentvolume "pv-x".'
    )
    deleting = claim("data", volume="pv-x", metadata={"deletionTimestamp": "2026-01-01T00:00:00Z"})
    result = place_burst(cluster(NODES, claims=[deleting]), [pod("p", "data")])
    assert result.messages[0].endswith('persistentvolumeclaim "data" is being deleted.')


def test_an_unbound_wait_for_first_consumer_claim_is_not_bound_anywhere_yet():
    state = cluster(
        NODES,
        claims=[claim("data")],
        volumes=[local_volume("pv-a", "a"), local_volume("pv-b", "b")],
        classes=[storage_class("local")],
    )
    result = place_burst(state, [pod("p", "data")])
    assert result.nodes == [None]
    assert result.errors[0] == vb.NOT_YET_DELAYED.format("data")


def test_a_class_without_binding_mode_is_an_error_as_upstream():
    broken = {"metadata": {"name": "local"}, "provisioner": "x"}
    state = cluster(NODES, claims=[claim("data")], classes=[broken])
    result = place_burst(state, [pod("p", "data")])
    assert result.errors[0] == 'VolumeBindingMode not set for StorageClass "local"'


def test_pods_sharing_a_spec_but_not_a_namespace_read_their_own_claims():
    state = cluster(
        NODES,
        claims=[claim("data", volume="pv-b"), claim("data", "other", volume="pv-c")],
        volumes=[local_volume("pv-b", "b"), local_volume("pv-c", "c")],
    )
    mine, theirs = pod("p", "data"), pod("q", "data")
    theirs["metadata"]["namespace"] = "other"
    assert place_burst(state, [mine, theirs]).nodes == ["b", "c"]
