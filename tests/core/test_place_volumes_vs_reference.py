"""The volume filters of the kernel path (class filters) against the reference's.

Hypothesis draws small clusters (hostnames, zones, cpu), volumes (node affinity to a
host or a zone, zone labels with one or two zones, none), claims (bound to a volume or to
a missing one, unbound Immediate, prebound, lost, being deleted, missing altogether) and
bursts whose pods use zero to two claims, under the default profile or one without
VolumeZone or VolumeRestrictions. Every kernel choice must be among the reference's
best nodes with its score, and every pod left out must fail there with the same
message and reason counts.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core.place import plan
from kubesalvo.core.plugins import registry
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.volumes import (
    ANN_SELECTED_NODE,
    CAPACITIES,
    CLAIMS,
    CLASSES,
    CSI_DRIVERS,
    CSI_NODES,
    VOLUMES,
    StorageObjects,
)
from tests.helpers.reference import (
    assert_same_outcomes,
    kernel_choices,
    plan_with_volumes_matches_reference,
    state_of,
)
from tests.helpers.volumes import HOSTNAME, ZONE, claim, claim_volume, csi_node, storage_class

ZONES = ("za", "zb", "zc")
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
DRIVER = "csi.example.com"
CLAIM_KINDS = (
    "bound",
    "dangling",
    "immediate",
    "prebound",
    "lost",
    "deleting",
    "missing",
    "rwop",
    "rwop",
)


@st.composite
def scenarios(draw):
    count = draw(st.integers(1, 6))
    fleet = []
    for i in range(count):
        labels = {HOSTNAME: f"n{i}"}
        if draw(st.booleans()):
            labels[ZONE] = draw(st.sampled_from(ZONES))
        cpu = str(draw(st.integers(1, 4)))
        fleet.append(
            {
                "metadata": {"name": f"n{i}", "labels": labels},
                "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
            }
        )
    storage = StorageObjects()
    storage.put(CLASSES, storage_class("fast", "Immediate"))
    names = []
    for v in range(draw(st.integers(0, 4))):
        spec = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}
        affinity = draw(st.sampled_from(("none", "host", "zone", "fields")))
        if affinity == "host":
            expr = {"key": HOSTNAME, "operator": "In", "values": [f"n{draw(st.integers(0, 6))}"]}
            spec["nodeAffinity"] = {
                "required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
            }
        elif affinity == "zone":
            expr = {"key": ZONE, "operator": "NotIn", "values": [draw(st.sampled_from(ZONES))]}
            spec["nodeAffinity"] = {
                "required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
            }
        elif affinity == "fields":
            # A volume's affinity is matched against labels alone: fields are ignored.
            field = {"key": "metadata.name", "operator": "In", "values": ["n0"]}
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchFields": [field]}]}}
        labels = {}
        zone_label = draw(st.sampled_from((None, ZONE, BETA_ZONE)))
        if zone_label:
            labels[zone_label] = "__".join(
                draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=2, unique=True))
            )
        if draw(st.booleans()):
            spec["csi"] = {"driver": DRIVER, "volumeHandle": f"h{v}"}
        storage.put(VOLUMES, {"metadata": {"name": f"pv{v}", "labels": labels}, "spec": spec})
        storage.put(CLAIMS, claim(f"c{v}", volume=f"pv{v}"))
        names.append(f"c{v}")
    for kind in draw(st.lists(st.sampled_from(CLAIM_KINDS), max_size=4, unique=True)):
        if kind == "dangling":
            storage.put(CLAIMS, claim(kind, volume="gone"))
        elif kind == "immediate":
            storage.put(CLAIMS, claim(kind, class_name=draw(st.sampled_from(("fast", "", None)))))
        elif kind == "prebound":
            storage.put(CLAIMS, claim(kind, volume="pv0", bound=False))
        elif kind == "lost":
            storage.put(CLAIMS, claim(kind, volume="pv0", status={"phase": "Lost"}))
        elif kind == "rwop":
            storage.put(VOLUMES, {"metadata": {"name": "nfs"}, "spec": {}})
            storage.put(CLAIMS, claim(kind, volume="nfs", modes=("ReadWriteOncePod",)))
        elif kind == "deleting":
            deleting = {"deletionTimestamp": "2026-01-01T00:00:00Z"}
            storage.put(CLAIMS, claim(kind, volume="pv0", metadata=deleting))
        names.append(kind)  # "missing" names a claim that does not exist
    burst = []
    for p in range(draw(st.integers(1, 6))):
        used = draw(st.lists(st.sampled_from(names), max_size=2, unique=True)) if names else []
        spec = {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": str(draw(st.integers(1, 2)))}}}
            ]
        }
        if used:
            spec["volumes"] = [claim_volume(f"v{i}", c) for i, c in enumerate(used)]
        burst.append(
            {"metadata": {"name": f"p{p}", "namespace": "ns", "uid": f"p{p}"}, "spec": spec}
        )
    for i in range(count):
        if draw(st.integers(0, 2)) == 0:
            limit = draw(st.sampled_from((None, 0, 1, 2)))
            storage.put(CSI_NODES, csi_node(f"n{i}", DRIVER, limit))
    left_out = draw(st.sampled_from((None, "VolumeZone", "VolumeRestrictions")))
    filters = tuple(f for f in registry.DEFAULT_FILTER_ORDER if f != left_out)
    bound = []
    holds = draw(st.lists(st.sampled_from(names), max_size=2, unique=True)) if names else []
    for v, held in enumerate(holds):
        if held in ("missing", "rwop"):
            continue
        bound.append(
            {
                "metadata": {"name": f"b{v}", "namespace": "ns", "uid": f"b{v}"},
                "spec": {
                    "nodeName": f"n{draw(st.integers(0, count - 1))}",
                    "containers": [{"name": "c"}],
                    "volumes": [claim_volume("v", held)],
                },
            }
        )
    if "rwop" in names and draw(st.booleans()):
        # A pod on a node already holds the ReadWriteOncePod claim.
        holder = {
            "metadata": {"name": "holder", "namespace": "ns", "uid": "holder"},
            "spec": {"nodeName": "n0", "containers": [{"name": "c"}]},
        }
        holder["spec"]["volumes"] = [claim_volume("v", "rwop")]
        bound.append(holder)
    return fleet, storage, burst, Profile(filters=filters), bound


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_volume_filters_match_the_reference(scenario):
    fleet, storage, burst, profile, bound = scenario
    state = state_of(fleet)
    state.storage = storage
    for pod in bound:
        state.add_pod(pod)
    result = plan(state, burst, profile)
    reference = ReferenceScheduler(fleet, bound, profile=profile)
    reference.storage = storage
    expected = reference.place_burst(burst, choose=kernel_choices(result, burst))
    assert_same_outcomes(result, expected)
    assert [r.error for r in expected] == [bool(e) for e in result.errors]


@st.composite
def delayed_scenarios(draw):
    """Unbound WaitForFirstConsumer claims competing for a few local volumes, or
    provisioned where a class's topology allows."""
    count = draw(st.integers(1, 5))
    fleet = []
    for i in range(count):
        labels = {HOSTNAME: f"n{i}", ZONE: draw(st.sampled_from(ZONES))}
        fleet.append(
            {
                "metadata": {"name": f"n{i}", "labels": labels},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
            }
        )
    storage = StorageObjects()
    storage.bind_delayed = True
    storage.put(CLASSES, storage_class("local"))
    zoned = storage_class("zoned", provisioner="csi.example.com")
    if draw(st.booleans()):
        zoned["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": ZONE, "values": [draw(st.sampled_from(ZONES))]}]}
        ]
    storage.put(CLASSES, zoned)
    if draw(st.booleans()):
        # The driver asks for storage capacity: some zones have room for some sizes.
        driver = {"metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": True}}
        storage.put(CSI_DRIVERS, driver)
        for z in draw(st.lists(st.sampled_from(ZONES), unique=True)):
            room = {
                "metadata": {"name": f"cap-{z}", "namespace": "kube-system"},
                "storageClassName": "zoned",
                "nodeTopology": {"matchLabels": {ZONE: z}},
                "capacity": f"{draw(st.sampled_from((1, 4, 50)))}Gi",
            }
            storage.put(CAPACITIES, room)
    for v in range(draw(st.integers(0, 6))):
        spec = {
            "capacity": {"storage": f"{draw(st.sampled_from((1, 2, 5, 10)))}Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
        }
        host = f"n{draw(st.integers(0, count))}"
        expr = {"key": HOSTNAME, "operator": "In", "values": [host]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
        labels = {"tier": draw(st.sampled_from(("gold", "silver")))}
        pv = {"metadata": {"name": f"pv{v}", "labels": labels}, "spec": spec}
        pv["status"] = {"phase": draw(st.sampled_from(("Available", "Available", "Released")))}
        storage.put(VOLUMES, pv)
    burst = []
    for p in range(draw(st.integers(1, 6))):
        used = []
        for k in range(draw(st.integers(1, 2))):
            name = f"c{p}-{k}"
            extra = {}
            if draw(st.integers(0, 3)) == 0:
                extra["spec"] = {"selector": {"matchLabels": {"tier": "gold"}}}
            class_name = draw(st.sampled_from(("local", "local", "zoned")))
            size = f"{draw(st.sampled_from((1, 2, 5, 20)))}Gi"
            if draw(st.integers(0, 4)) == 0:
                # A provisioning asked for earlier names its node.
                selected = f"n{draw(st.integers(0, count))}"
                extra["metadata"] = {"annotations": {ANN_SELECTED_NODE: selected}}
            storage.put(CLAIMS, claim(name, class_name=class_name, size=size, **extra))
            used.append(name)
        spec = {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "volumes": [claim_volume(f"v{i}", c) for i, c in enumerate(used)],
        }
        burst.append(
            {"metadata": {"name": f"p{p}", "namespace": "ns", "uid": f"p{p}"}, "spec": spec}
        )
    return fleet, storage, burst


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(delayed_scenarios())
def test_delayed_claims_match_the_reference_and_no_volume_is_given_twice(scenario):
    fleet, storage, burst = scenario
    _, result, _ = plan_with_volumes_matches_reference(fleet, storage, burst)
    given_out = [pv for chosen in result.volume_bindings for _, pv in chosen if pv]
    assert len(given_out) == len(set(given_out))
    assert storage.assumed == {}  # plan() took its reservations back
