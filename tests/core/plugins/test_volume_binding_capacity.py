"""VolumeBinding's Score with StorageCapacityScoring on (its args have a shape), in-process:
the smallest fitting static volume's utilization decides, provisioned claims score by
their pool's CSIStorageCapacity, static bindings outrank provisioning, a burst scores
each pod after the volumes the earlier ones took, and with the gate off the score is 0."""

import dataclasses

from kubesalvo.core.place import plan
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.node_resources_fit import ShapePoint
from kubesalvo.core.plugins.volume_binding import DEFAULT_SHAPE, VolumeBindingArgs
from kubesalvo.core.profile import Profile
from kubesalvo.core.volumes import CAPACITIES
from tests.core.plugins.test_volume_binding_delayed import available, cluster, node, pod
from tests.helpers.volumes import claim, local_volume, storage_class

DRIVER = "csi.example.com"


def scoring(shape=DEFAULT_SHAPE, *, only=False):
    """The default profile with the gate on; ``only``: VolumeBinding is the one score."""
    base = Profile.default()
    scores = ((names.VOLUME_BINDING, 1),) if only else base.scores
    args = ((names.VOLUME_BINDING, VolumeBindingArgs(shape=shape)),)
    return dataclasses.replace(base, scores=scores, plugin_args=args)


def test_the_node_whose_smallest_fitting_volume_is_emptiest_wins():
    # a 4Gi claim: a's smallest fitting volume is 5Gi (80%), b's 40Gi (10%)
    pvs = [
        available(local_volume("pv-a", "a", size="5Gi")),
        available(local_volume("pv-a2", "a", size="100Gi")),
        available(local_volume("pv-b", "b", size="40Gi")),
    ]
    state = cluster([node("a"), node("b")], [claim("d", size="4Gi")], pvs)
    result = plan(state, [pod("p", "d")], scoring(only=True))
    assert result.nodes == ["b"]
    assert result.scores[0] == 90
    assert result.volume_bindings[0] == [("ns/d", "pv-b")]


def test_a_custom_shape_can_prefer_the_fullest_volume():
    pvs = [
        available(local_volume("pv-a", "a", size="5Gi")),
        available(local_volume("pv-b", "b", size="40Gi")),
    ]
    state = cluster([node("a"), node("b")], [claim("d", size="4Gi")], pvs)
    shape = (ShapePoint(0, 0), ShapePoint(100, 10))
    result = plan(state, [pod("p", "d")], scoring(shape, only=True))
    assert result.nodes == ["a"]
    assert result.scores[0] == 80


def test_with_the_gate_off_capacity_does_not_score():
    pvs = [
        available(local_volume("pv-a", "a", size="5Gi")),
        available(local_volume("pv-b", "b", size="40Gi")),
    ]
    state = cluster([node("a"), node("b")], [claim("d", size="4Gi")], pvs)
    off = dataclasses.replace(Profile.default(), scores=((names.VOLUME_BINDING, 1),))
    result = plan(state, [pod("p", "d")], off)
    assert result.scores[0] == 0
    assert result.ties[0] == 2


def test_provisioned_claims_score_by_the_pool_capacity_of_their_node():
    driver = {"metadata": {"name": DRIVER}, "spec": {"storageCapacity": True}}
    classes = [storage_class("csi", provisioner=DRIVER)]
    state = cluster(
        [node("a", zone="za"), node("b", zone="zb")],
        [claim("d", class_name="csi", size="10Gi")],
        classes=classes,
        drivers=[driver],
    )
    for zone, size in (("za", "20Gi"), ("zb", "100Gi")):
        state.storage.put(
            CAPACITIES,
            {
                "metadata": {"name": f"cap-{zone}", "namespace": "kube-system"},
                "storageClassName": "csi",
                "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": zone}},
                "capacity": size,
            },
        )
    result = plan(state, [pod("p", "d")], scoring(only=True))
    assert result.nodes == ["b"]
    assert result.scores[0] == 90  # 10Gi of 100Gi


def test_each_pod_of_a_burst_is_scored_after_the_volumes_taken_before_it():
    # a holds 5Gi and 50Gi volumes, b one 10Gi: the first 4Gi claim takes b's (40% < 80%),
    # the second finds a's 5Gi (80%) only, the third a's 50Gi (8%)
    pvs = [
        available(local_volume("pv-a5", "a", size="5Gi")),
        available(local_volume("pv-a50", "a", size="50Gi")),
        available(local_volume("pv-b10", "b", size="10Gi")),
    ]
    claims = [claim(f"d{i}", size="4Gi") for i in range(3)]
    state = cluster([node("a"), node("b")], claims, pvs)
    burst = [pod(f"p{i}", f"d{i}") for i in range(3)]
    result = plan(state, burst, scoring(only=True))
    assert result.nodes == ["b", "a", "a"]
    assert [dict(b) for b in result.volume_bindings] == [
        {"ns/d0": "pv-b10"},
        {"ns/d1": "pv-a5"},
        {"ns/d2": "pv-a50"},
    ]
    assert list(result.scores) == [60, 20, 92]
