"""The burst cycle's preemption picture (``cycle.post_filter.decide``), without the API server.

The picture is made of the informers' decoded objects: a pod the cache holds as assumed
(its bind still in flight, so the store shows no node) must count on its assumed node, and
the decisions of one burst are committed one after the other, so a second preemptor sees
the first one's victims gone and its room taken. (Writing the decisions and the whole
``kubesalvo run`` path are checked against the real control plane in
test_preemption_run.py.)
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesalvo.core.preemption import PreemptionArgs
from kubesalvo.core.profile import Profile
from kubesalvo.sched.cycle.post_filter import ClusterObjects, decide
from kubesalvo.sched.informers import to_api_dict
from kubesalvo.sched.informers.models import Node, Pod


def node(name: str, cpu: str) -> Node:
    return msgspec.convert(
        {
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"n": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
        },
        Node,
    )


def pod(name: str, cpu: str, priority: int, node_name: str = "") -> Pod:
    spec: dict[str, Any] = {
        "priority": priority,
        "schedulerName": "kubesalvo",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"},
        },
        Pod,
    )


def victims(decision: Any) -> list[str]:
    return sorted(v["metadata"]["name"] for v in decision.victims)


def test_an_assumed_pod_counts_on_its_assumed_node_and_can_be_a_victim():
    low = pod("low", "2", 10)  # bind in flight: the store shows no node yet
    high = pod("high", "1", 1000)
    objects = ClusterObjects(
        nodes=[node("a", "2")], pods=[low, high], assumed={low.metadata.uid: "a"}
    )
    [decision] = decide(objects, [to_api_dict(high)], Profile(), PreemptionArgs())
    assert decision.node == "a"
    assert victims(decision) == ["low"]
    assert decision.nominated_node_name == "a"


def test_without_the_assumption_the_node_looks_free_and_nothing_is_evicted():
    low = pod("low", "2", 10)
    high = pod("high", "1", 1000)
    objects = ClusterObjects(nodes=[node("a", "2")], pods=[low, high])
    [decision] = decide(objects, [to_api_dict(high)], Profile(), PreemptionArgs())
    assert decision.node is None and decision.victims == []


def test_each_decision_of_a_burst_sees_the_previous_ones():
    lows = [pod(f"low-{i}", "1", 10, "a") for i in range(2)]
    first, second = pod("first", "1", 1000), pod("second", "1", 1000)
    objects = ClusterObjects(nodes=[node("a", "2")], pods=[*lows, first, second])
    pending = [to_api_dict(first), to_api_dict(second)]
    one, two = decide(objects, pending, Profile(), PreemptionArgs())
    assert one.node == "a" and two.node == "a"
    # The second evicts the other low pod: the first's victim is gone and its room is
    # held by the first, now nominated there.
    assert len(one.victims) == 1 and len(two.victims) == 1
    assert victims(one) != victims(two)


def test_a_never_pod_is_not_eligible_and_the_others_of_its_burst_still_preempt():
    lows = [pod(f"low-{i}", "1", 10, "a") for i in range(2)]
    never, high = pod("never", "1", 1000), pod("high", "1", 1000)
    pending = [to_api_dict(never), to_api_dict(high)]
    pending[0]["spec"]["preemptionPolicy"] = "Never"
    objects = ClusterObjects(nodes=[node("a", "2")], pods=[*lows, never, high])
    refused, chosen = decide(objects, pending, Profile(), PreemptionArgs())
    assert refused.node is None and refused.victims == []
    assert refused.message == "preemption: not eligible due to preemptionPolicy=Never."
    assert refused.nominated_node_name is None
    assert chosen.node == "a" and len(chosen.victims) == 1


def test_replicas_that_can_evict_nothing_all_get_the_dry_runs_answer():
    highs = [pod(f"high-{i}", "1", 1000, "a") for i in range(2)]
    replicas = [pod(f"r-{i}", "1", 10) for i in range(5)]
    objects = ClusterObjects(nodes=[node("a", "2")], pods=[*highs, *replicas])
    decisions = decide(objects, [to_api_dict(r) for r in replicas], Profile(), PreemptionArgs())
    expected = (
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert [d.message for d in decisions] == [expected] * len(replicas)
    assert all(d.node is None and d.nominated_node_name == "" for d in decisions)
