"""VolumeZone through the encoder's class filter: a bound volume's zone labels become a
node mask (nodes without any zone label pass), with kube-scheduler's PreFilter texts."""

from kubesalvo.core.place import place_burst
from kubesalvo.core.plugins import registry
from kubesalvo.core.plugins.volume_zone import ERR_REASON_CONFLICT, zones_of
from kubesalvo.core.profile import Profile
from kubesalvo.core.state import ClusterState
from kubesalvo.core.volumes import CLAIMS, CLASSES, VOLUMES
from tests.helpers.volumes import ZONE, claim, claim_volume, local_volume, storage_class

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


def node(name, cpu="4", **labels):
    labels = {"kubernetes.io/hostname": name, **labels}
    allocatable = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable}}


def pod(name, *claims):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    spec["volumes"] = [claim_volume(f"v{i}", c) for i, c in enumerate(claims)]
    return {"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec}


def cluster(nodes, claims=(), volumes=(), classes=()):
    state = ClusterState()
    for n in nodes:
        state.add_node(n)
    for kind, objects in ((CLAIMS, claims), (VOLUMES, volumes), (CLASSES, classes)):
        for obj in objects:
            state.storage.put(kind, obj)
    return state


def zoned(name, labels):
    # A zonal disk (no node affinity): only VolumeZone keeps the pod in its zone.
    return local_volume(name, labels=labels)


def test_a_pod_whose_volume_is_in_zone_zb_goes_to_zone_zb():
    nodes = [node("a", cpu="8", **{ZONE: "za"}), node("b", **{ZONE: "zb"})]
    state = cluster(nodes, [claim("d", volume="pv")], [zoned("pv", {ZONE: "zb"})])
    assert place_burst(state, [pod("p", "d")]).nodes == ["b"]


def test_nodes_without_any_zone_label_pass_and_others_are_counted_as_conflicts():
    nodes = [node("a", **{ZONE: "za"}), node("plain", cpu="1"), node("c", **{ZONE: "za"})]
    state = cluster(nodes, [claim("d", volume="pv")], [zoned("pv", {ZONE: "zb"})])
    result = place_burst(state, [pod("p", "d")])
    assert result.nodes == ["plain"]
    full = place_burst(state, [pod("q", "d")], commit=False)
    assert full.nodes == [None]
    assert full.messages[0] == (
        f"0/3 nodes are available: 1 Insufficient cpu, 2 {ERR_REASON_CONFLICT}."
    )


def test_multi_zone_values_and_the_beta_label_matched_by_the_ga_label():
    nodes = [node("a", **{ZONE: "za"}), node("b", **{ZONE: "zb"}), node("c", **{ZONE: "zc"})]
    state = cluster(nodes, [claim("d", volume="pv")], [zoned("pv", {BETA_ZONE: "zb__zc"})])
    result = place_burst(state, [pod("p", "d"), pod("q", "d"), pod("r", "d")])
    assert set(result.nodes) == {"b", "c"}  # never a, whose zone the volume lacks
    assert zones_of("za__ zb") == {"za", "zb"}
    assert zones_of("za____zb") is None  # an empty zone: the label is ignored


def test_prefilter_texts_for_missing_objects_when_volume_zone_reads_first():
    filters = ("VolumeZone",)
    profile = Profile(filters=filters)
    nodes = [node("a")]
    cases = [
        (cluster(nodes), 'persistentvolumeclaim "d" not found'),
        (cluster(nodes, [claim("d", volume="pv")]), 'persistentvolume "pv" not found'),
        (
            cluster(nodes, [claim("d", class_name="gold")]),
            'storageclass.storage.k8s.io "gold" not found',
        ),
        (
            cluster(nodes, [claim("d", class_name="")]),
            "PersistentVolumeClaim had no pv name and storageClass name",
        ),
        (
            cluster(
                nodes, [claim("d", class_name="now")], classes=[storage_class("now", "Immediate")]
            ),
            "PersistentVolume had no name",
        ),
    ]
    for state, text in cases:
        result = place_burst(state, [pod("p", "d")], profile)
        assert result.messages[0] == f"0/1 nodes are available: {text}.", text
        assert result.prefilter_rejector[0] == "VolumeZone"


def test_an_unbound_wait_for_first_consumer_claim_is_left_to_volume_binding():
    filters = tuple(f for f in registry.DEFAULT_FILTER_ORDER if f != "VolumeBinding")
    state = cluster([node("a", **{ZONE: "za"})], [claim("d")], classes=[storage_class("local")])
    assert place_burst(state, [pod("p", "d")], Profile(filters=filters)).nodes == ["a"]
