"""VolumeBinding for unbound WaitForFirstConsumer claims, in-process: static volumes
matched per node (the smallest that fits, class, access modes, selector, node affinity),
provisioning where the class's topology allows, and a burst placed so that no two pods
get one volume (Reserve assumes each pod's volumes before the next pod is filtered)."""

from kubesalvo.core.place import place_burst, plan
from kubesalvo.core.state import ClusterState
from kubesalvo.core.volumes import CAPACITIES, CLAIMS, CLASSES, CSI_DRIVERS, VOLUMES
from tests.helpers.volumes import ZONE, claim, claim_volume, local_volume, storage_class

BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"


def node(name, cpu="4", zone=None):
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels[ZONE] = zone
    allocatable = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable}}


def pod(name, *claims):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    spec["volumes"] = [claim_volume(f"v{i}", c) for i, c in enumerate(claims)]
    return {"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec}


def available(pv):
    pv["status"] = {"phase": "Available"}
    return pv


def cluster(nodes, claims=(), pvs=(), classes=None, drivers=()):
    classes = classes if classes is not None else [storage_class("local")]
    state = ClusterState()
    state.storage.bind_delayed = True
    for n in nodes:
        state.add_node(n)
    for kind, objects in ((CLAIMS, claims), (VOLUMES, pvs), (CLASSES, classes)):
        for obj in objects:
            state.storage.put(kind, obj)
    for driver in drivers:
        state.storage.put(CSI_DRIVERS, driver)
    return state


NODES = [node("a"), node("b"), node("c", cpu="16")]


def test_a_pod_goes_to_a_node_holding_a_free_matching_volume_never_the_roomiest():
    state = cluster(
        NODES,
        [claim("d")],
        [available(local_volume("pv-a", "a")), available(local_volume("pv-b", "b"))],
    )
    result = place_burst(state, [pod("p", "d")])
    assert result.nodes[0] in ("a", "b")
    assert result.volume_bindings[0] == [("ns/d", f"pv-{result.nodes[0]}")]
    assert state.storage.assumed == {f"pv-{result.nodes[0]}": "ns/d"}


def test_a_burst_never_gives_one_volume_to_two_pods_and_the_rest_wait_with_upstreams_text():
    pvs = [available(local_volume("pv-a", "a")), available(local_volume("pv-b", "b"))]
    state = cluster(NODES, [claim(f"d{i}") for i in range(3)], pvs)
    result = place_burst(state, [pod(f"p{i}", f"d{i}") for i in range(3)])
    assert sorted(n for n in result.nodes[:2]) == ["a", "b"]
    chosen = [pv for bindings in result.volume_bindings[:2] for _, pv in bindings]
    assert sorted(chosen) == ["pv-a", "pv-b"]
    assert result.nodes[2] is None
    assert result.messages[2] == f"0/3 nodes are available: 3 {BIND_CONFLICT}."
    assert result.rejectors[2] == {"VolumeBinding"}


def test_the_smallest_volume_that_fits_is_chosen_and_too_small_ones_never():
    pvs = [
        available(local_volume("small", "a", size="1Gi")),
        available(local_volume("big", "a", size="20Gi")),
        available(local_volume("fit", "a", size="10Gi")),
    ]
    state = cluster([node("a")], [claim("d", size="5Gi")], pvs)
    assert place_burst(state, [pod("p", "d")]).volume_bindings[0] == [("ns/d", "fit")]
    too_big = cluster([node("a")], [claim("d", size="50Gi")], pvs)
    result = place_burst(too_big, [pod("p", "d")])
    assert result.messages[0] == f"0/1 nodes are available: 1 {BIND_CONFLICT}."


def test_class_access_modes_selector_and_availability_decide_the_match():
    other_class = available(local_volume("pv1", "a", class_name="other"))
    read_only = available(local_volume("pv2", "a"))
    read_only["spec"]["accessModes"] = ["ReadOnlyMany"]
    unlabelled = available(local_volume("pv3", "a"))
    released = local_volume("pv4", "a")
    released["status"] = {"phase": "Released"}
    selective = claim("d", spec={"selector": {"matchLabels": {"tier": "gold"}}})
    state = cluster([node("a")], [selective], [other_class, read_only, unlabelled, released])
    assert place_burst(state, [pod("p", "d")]).nodes == [None]
    gold = available(local_volume("pv5", "a", labels={"tier": "gold"}))
    state.storage.put(VOLUMES, gold)
    assert place_burst(state, [pod("p", "d")]).volume_bindings[0] == [("ns/d", "pv5")]


def test_two_claims_of_one_pod_take_two_volumes_of_one_node():
    pvs = [
        available(local_volume("a1", "a", size="5Gi")),
        available(local_volume("b1", "b", size="5Gi")),
        available(local_volume("b2", "b", size="5Gi")),
    ]
    state = cluster(NODES, [claim("x"), claim("y")], pvs)
    result = place_burst(state, [pod("p", "x", "y")])
    assert result.nodes == ["b"]
    assert sorted(pv for _, pv in result.volume_bindings[0]) == ["b1", "b2"]


def test_a_provisioner_class_provisions_where_its_topology_allows():
    zoned = storage_class("csi", provisioner="csi.example.com")
    zoned["allowedTopologies"] = [{"matchLabelExpressions": [{"key": ZONE, "values": ["zb"]}]}]
    nodes = [node("a", cpu="16", zone="za"), node("b", zone="zb")]
    state = cluster(nodes, [claim("d", class_name="csi")], classes=[zoned])
    result = place_burst(state, [pod("p", "d")])
    assert result.nodes == ["b"]
    assert result.volume_bindings[0] == [("ns/d", "")]  # to provision on b


def capacity(name, class_name, zone, size, maximum=None):
    obj = {
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": class_name,
        "nodeTopology": {"matchLabels": {ZONE: zone}},
        "capacity": size,
    }
    if maximum:
        obj["maximumVolumeSize"] = maximum
    return obj


def test_a_driver_asking_for_storage_capacity_provisions_only_where_there_is_room():
    driver = {"metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": True}}
    nodes = [node("a", cpu="16", zone="za"), node("b", zone="zb"), node("c", zone="zc")]
    state = cluster(
        nodes,
        [claim("d", class_name="csi", size="5Gi")],
        classes=[storage_class("csi", provisioner="csi.example.com")],
        drivers=[driver],
    )
    for obj in (
        capacity("za", "csi", "za", "100Gi", maximum="1Gi"),  # no volume above 1Gi there
        capacity("zb", "csi", "zb", "10Gi"),
        capacity("other", "other", "zc", "100Gi"),  # another class's
    ):
        state.storage.put(CAPACITIES, obj)
    result = place_burst(state, [pod("p", "d")])
    assert result.nodes == ["b"] and result.volume_bindings[0] == [("ns/d", "")]
    state.storage.put(CAPACITIES, capacity("zb", "csi", "zb", "1Gi"))
    full = place_burst(state, [pod("q", "d")])
    assert full.messages[0] == (
        "0/3 nodes are available: 3 node(s) did not have enough free storage."
    )


def test_plan_takes_back_its_placements_and_assumptions():
    pvs = [available(local_volume("pv-a", "a"))]
    state = cluster(NODES, [claim("d0"), claim("d1")], pvs)
    first = plan(state, [pod("p0", "d0"), pod("p1", "d1")])
    assert first.nodes == ["a", None]
    assert state.storage.assumed == {} and not state.pods
    again = plan(state, [pod("p1", "d1")])
    assert again.nodes == ["a"]


def test_a_claim_with_a_selected_node_admits_that_node_only_and_is_provisioned_there():
    selected = claim(
        "d",
        class_name="csi",
        metadata={"annotations": {"volume.kubernetes.io/selected-node": "b"}},
    )
    classes = [storage_class("csi", provisioner="csi.example.com")]
    state = cluster(NODES, [selected], classes=classes)
    result = place_burst(state, [pod("p", "d")])
    assert result.nodes == ["b"]
    assert result.volume_bindings[0] == [("ns/d", "")]
    gone = cluster([node("a"), node("c")], [selected], classes=classes)
    assert place_burst(gone, [pod("p", "d")]).messages[0] == (
        f"0/2 nodes are available: 2 {BIND_CONFLICT}."
    )
