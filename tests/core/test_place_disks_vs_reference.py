"""VolumeRestrictions' in-tree disk conflicts on the kernel path against the reference.

Hypothesis draws a few nodes, pods already on them and a burst, each pod mounting up to
two in-tree disks (GCE PD, EBS, iSCSI, RBD) drawn from a small set of identities, some
read-only: every kernel choice must be among the reference's best nodes, every pod left
out must fail there with the same message, and no node ends with two pods mounting one
disk in a conflicting way.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core import in_tree_disks
from kubesalvo.core.place import plan
from kubesalvo.core.reference import ReferenceScheduler
from tests.helpers.reference import assert_same_outcomes, kernel_choices, state_of
from tests.helpers.volumes import HOSTNAME


@st.composite
def disk(draw, index):
    kind = draw(st.sampled_from(("gce", "ebs", "iscsi", "rbd")))
    ident = draw(st.sampled_from(("x", "y")))
    read_only = draw(st.booleans())
    if kind == "gce":
        source = {"gcePersistentDisk": {"pdName": ident, "readOnly": read_only}}
    elif kind == "ebs":
        source = {"awsElasticBlockStore": {"volumeID": ident, "readOnly": read_only}}
    elif kind == "iscsi":
        source = {"iscsi": {"targetPortal": "t:3260", "iqn": ident, "readOnly": read_only}}
    else:
        monitors = draw(st.lists(st.sampled_from(("m1", "m2", "m3")), min_size=1, unique=True))
        pool = draw(st.sampled_from((None, "rbd", "other")))
        rbd = {"monitors": monitors, "image": ident, "readOnly": read_only}
        if pool:
            rbd["pool"] = pool
        source = {"rbd": rbd}
    return {"name": f"d{index}", **source}


@st.composite
def scenarios(draw):
    count = draw(st.integers(1, 4))
    fleet = [
        {
            "metadata": {"name": f"n{i}", "labels": {HOSTNAME: f"n{i}"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
        for i in range(count)
    ]

    def pod(name, node=None):
        volumes = [draw(disk(i)) for i in range(draw(st.integers(0, 2)))]
        spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
        if volumes:
            spec["volumes"] = volumes
        if node is not None:
            spec["nodeName"] = node
        return {"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec}

    bound = [
        pod(f"b{i}", f"n{draw(st.integers(0, count - 1))}") for i in range(draw(st.integers(0, 4)))
    ]
    burst = [pod(f"p{i}") for i in range(draw(st.integers(1, 6)))]
    return fleet, bound, burst


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_disk_conflicts_match_the_reference(scenario):
    fleet, bound, burst = scenario
    state = state_of(fleet)
    for pod in bound:
        state.add_pod(pod)
    result = plan(state, burst)
    reference = ReferenceScheduler(fleet, bound)
    expected = reference.place_burst(burst, choose=kernel_choices(result, burst))
    assert_same_outcomes(result, expected)
    # Pods placed by the burst never conflict with one another on a node.
    placed: dict[str, list] = {}
    for pod, node in zip(burst, result.nodes, strict=True):
        if node is None:
            continue
        mine = in_tree_disks.disks(pod["spec"])
        assert not any(in_tree_disks.conflict(d, placed.get(node, [])) for d in mine)
        placed.setdefault(node, []).extend(mine)
