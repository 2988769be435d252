"""Generic ephemeral volumes in the kernel path against the reference's per-node plugins.

Hypothesis draws small fleets (CSINode limits on a CSI driver, local volumes on some
nodes) and bursts whose pods have one or two generic ephemeral volumes (resolved to the
claims ``<pod>-<volume>`` as the runtime reads pods) beside an optional
persistentVolumeClaim. Each ephemeral claim is missing (the controller has not made it),
controlled by another pod, bound to a CSI volume, or unbound WaitForFirstConsumer on the
local volumes. Every kernel choice must be among the reference's best nodes with its
score, and every pod left out must fail there with the same message and reasons.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core.volumes import (
    CLAIMS,
    CLASSES,
    CSI_NODES,
    VOLUMES,
    StorageObjects,
    resolve_ephemeral,
)
from tests.helpers.reference import (
    plan_with_volumes_matches_reference,
)
from tests.helpers.volumes import HOSTNAME, claim, claim_volume, csi_node, storage_class

DRIVER = "csi.example.com"
KINDS = ("missing", "foreign", "csi", "csi", "csi", "delayed", "delayed", "delayed")


def _owned(name: str, uid: str, **extra) -> dict:
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": uid, "controller": True}
    made = claim(name, **extra)
    made["metadata"]["ownerReferences"] = [owner]
    return made


@st.composite
def scenarios(draw):
    count = draw(st.integers(1, 4))
    fleet = []
    storage = StorageObjects()
    storage.bind_delayed = True
    storage.put(CLASSES, storage_class("local"))
    for i in range(count):
        name = f"n{i}"
        fleet.append(
            {
                "metadata": {"name": name, "labels": {HOSTNAME: name}},
                "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
            }
        )
        limit = draw(st.sampled_from((None, 1, 2, 3)))
        if limit is not None:
            storage.put(CSI_NODES, csi_node(name, DRIVER, limit))
    for v in range(draw(st.integers(0, 4))):
        host = f"n{draw(st.integers(0, count - 1))}"
        term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [host]}]}
        size = f"{draw(st.sampled_from((1, 5)))}Gi"
        spec = {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        }
        pv = {"metadata": {"name": f"local{v}"}, "spec": spec, "status": {"phase": "Available"}}
        storage.put(VOLUMES, pv)
    handles = 0
    burst = []
    for p in range(draw(st.integers(1, 5))):
        name, uid = f"p{p}", f"uid-p{p}"
        template = {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local"}}
        volumes = [
            {"name": f"e{k}", "ephemeral": {"volumeClaimTemplate": template}}
            for k in range(draw(st.integers(1, 2)))
        ]
        for volume in volumes:
            claim_name = f"{name}-{volume['name']}"
            kind = draw(st.sampled_from(KINDS))
            if kind == "missing":
                continue
            if kind == "foreign":
                storage.put(CLAIMS, _owned(claim_name, "uid-someone-else"))
            elif kind == "csi":
                # A CSI volume; two ephemeral claims may share one handle (counted once).
                handle = f"h{draw(st.integers(0, handles))}"
                handles += 1
                pv_name = f"pv-{claim_name}"
                pv_spec = {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "csi": {"driver": DRIVER, "volumeHandle": handle},
                }
                storage.put(VOLUMES, {"metadata": {"name": pv_name}, "spec": pv_spec})
                storage.put(CLAIMS, _owned(claim_name, uid, volume=pv_name, class_name=None))
            else:
                size = f"{draw(st.sampled_from((1, 2)))}Gi"
                storage.put(CLAIMS, _owned(claim_name, uid, size=size))
        if draw(st.booleans()):
            # A persistentVolumeClaim bound to a CSI volume too.
            pv_name = f"pv-shared-{p}"
            pv_spec = {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "csi": {"driver": DRIVER, "volumeHandle": f"s{p}"},
            }
            storage.put(VOLUMES, {"metadata": {"name": pv_name}, "spec": pv_spec})
            storage.put(CLAIMS, claim(f"shared-{p}", volume=pv_name, class_name=None))
            volumes.append(claim_volume("shared", f"shared-{p}"))
        spec = {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "volumes": volumes,
        }
        pod = {"metadata": {"name": name, "namespace": "ns", "uid": uid}, "spec": spec}
        burst.append(resolve_ephemeral(pod))
    return fleet, storage, burst


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_ephemeral_volumes_match_the_reference(scenario):
    fleet, storage, burst = scenario
    _, result, expected = plan_with_volumes_matches_reference(
        fleet, storage, burst, same_volumes=False
    )
    assert [r.error for r in expected] == [bool(e) for e in result.errors]
