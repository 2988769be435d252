"""Runs of alike claiming pods placed as one segment (core/volume_slots.py).

Pods whose one unbound WaitForFirstConsumer claim is like the others' (one class of local
volumes, one size, one selector) are placed together, the free volumes counted per node in
a resource column. Hypothesis draws small clusters, local volumes (some on no node, some on
two, some released), alike claims (sometimes with a selector, sometimes more pods than
volumes), pods that need more cpu than some nodes have, and pods without claims between
them. Every kernel choice must be among the reference's best nodes, every pod left out
must fail with the reference's message and reason counts, the volume chosen on the node
must be the reference's, no volume is given twice, and nothing stays counted.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core import volume_burst, volume_slots
from kubesalvo.core.place import place_burst
from kubesalvo.core.synthetic import FleetSpec, Scenario, WorkloadSpec
from kubesalvo.core.volumes import CLAIMS, CLASSES, VOLUMES, StorageObjects
from kubesalvo.sched.simulate.run import load_state
from tests.helpers.reference import (
    plan_with_volumes_matches_reference,
)
from tests.helpers.volumes import HOSTNAME, claim, claim_volume, storage_class


@st.composite
def alike_runs(draw):
    count = draw(st.integers(1, 5))
    fleet = []
    for i in range(count):
        cpu = str(draw(st.integers(1, 4)))
        fleet.append(
            {
                "metadata": {"name": f"n{i}", "labels": {HOSTNAME: f"n{i}"}},
                "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
            }
        )
    storage = StorageObjects()
    storage.bind_delayed = True
    storage.put(CLASSES, storage_class("local"))
    for v in range(draw(st.integers(0, 8))):
        spec = {
            "capacity": {"storage": f"{draw(st.sampled_from((5, 10)))}Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
        }
        hosts = draw(st.sampled_from(("one", "one", "one", "none", "two")))
        values = {"one": [f"n{draw(st.integers(0, count - 1))}"], "none": ["gone"]}
        values["two"] = ["n0", f"n{count - 1}"]
        expr = {"key": HOSTNAME, "operator": "In", "values": values[hosts]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}
        labels = {"tier": draw(st.sampled_from(("gold", "silver")))}
        pv = {"metadata": {"name": f"pv{v}", "labels": labels}, "spec": spec}
        pv["status"] = {"phase": draw(st.sampled_from(("Available", "Available", "Released")))}
        storage.put(VOLUMES, pv)
    selector = draw(st.booleans())
    burst = []
    for p in range(draw(st.integers(2, 9))):
        spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
        if draw(st.integers(0, 4)):
            extra = {}
            if selector:
                extra["spec"] = {"selector": {"matchLabels": {"tier": "gold"}}}
            storage.put(CLAIMS, claim(f"c{p}", class_name="local", size="5Gi", **extra))
            spec["volumes"] = [claim_volume("data", f"c{p}")]
        burst.append(
            {"metadata": {"name": f"p{p}", "namespace": "ns", "uid": f"p{p}"}, "spec": spec}
        )
    return fleet, storage, burst


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(alike_runs())
def test_alike_runs_match_the_reference_and_no_volume_is_given_twice(scenario):
    fleet, storage, burst = scenario
    state, result, _ = plan_with_volumes_matches_reference(fleet, storage, burst)
    given_out = [pv for chosen in result.volume_bindings for _, pv in chosen if pv]
    assert len(given_out) == len(set(given_out))
    assert storage.assumed == {}  # plan() took its reservations back
    assert storage.counted == frozenset()
    if volume_slots.COLUMN in state.resource_names:  # the count is gone with the segment
        column = state.resource_names.index(volume_slots.COLUMN)
        assert not state.requested[:, column].any()
        assert not state.allocatable[:, column].any()


def _stateful_state(nodes: int, pods: int):
    scenario = Scenario(
        name="stateful",
        seed=3,
        fleet=FleetSpec(nodes=nodes, cordoned_fraction=0.0, pools=(("general", 1.0),)),
        workloads=(WorkloadSpec(shape="stateful", pods=pods),),
    )
    snapshot = scenario.generate()
    return load_state(snapshot), snapshot.pending_pods()


def test_a_stateful_burst_counted_per_node_decides_as_pod_by_pod(monkeypatch):
    """With the same tie stream, the counted segment makes the choices that one segment
    per pod makes (nothing is taken back when every pod fits)."""
    state, pods = _stateful_state(40, 70)
    counted = place_burst(state, pods)
    state_again, pods_again = _stateful_state(40, 70)
    monkeypatch.setattr(volume_burst, "COUNT_ALIKE", False)
    one_by_one = place_burst(state_again, pods_again)
    assert counted.placed == one_by_one.placed == 70
    assert counted.nodes == one_by_one.nodes
    assert counted.volume_bindings == one_by_one.volume_bindings
    assert sorted(state.storage.reserved.items()) == sorted(state_again.storage.reserved.items())


def test_a_stateful_burst_larger_than_its_volumes_leaves_the_rest_with_upstreams_text():
    state, pods = _stateful_state(10, 26)  # 20 volumes for 26 pods
    result = place_burst(state, pods)
    assert result.placed == 20
    used = [pv for chosen in result.volume_bindings for _, pv in chosen if pv]
    assert len(used) == len(set(used)) == 20
    volumes_of = {pv["metadata"]["name"]: pv for pv in state.storage.objects[VOLUMES].values()}
    for node, chosen in zip(result.nodes, result.volume_bindings, strict=True):
        if node is None:
            assert chosen == []
            continue
        ((_, pv),) = chosen
        term = volumes_of[pv]["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
        assert term["matchExpressions"][0]["values"] == [node]
    left = [m for m, n in zip(result.messages, result.nodes, strict=True) if n is None]
    assert (
        left
        == [
            "0/10 nodes are available: 10 node(s) didn't find available persistent volumes to bind."
        ]
        * 6
    )
