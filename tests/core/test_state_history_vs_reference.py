"""The kernel against the reference after a history of node and pod events.

The other property tests build the state in one go. Here Hypothesis draws a cluster and
its bound pods, and a first burst that the kernel places and commits (the reference's
cache gets those pods bound where the kernel put them); then a sequence of events
applied in the same order to the ClusterState and to the reference's model of
kube-scheduler's cache: pods removed (among them pods that share a host port with
another pod of their node, and pods of the first burst), nodes removed while pods are
still on them, nodes added back under the same name with other labels and images (of
other sizes), pods bound to nodes that are absent. Then a second burst is planned by
the kernel and replayed by the reference over the cache's snapshot; the checks are
those of test_place_vs_reference.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core.pernode.snapshot import Cache
from kubesalvo.core.place import place_burst, plan
from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.state import ClusterState
from tests.core.test_place_vs_reference import NAMESPACES, WORKLOADS, nodes, pods, profiles
from tests.helpers.reference import assert_same_outcomes, kernel_choices


def port_pod(name: str, node_name: str, port: int) -> dict:
    """A small bound pod holding a host port (so that two pods of a node can share one)."""
    container = {
        "name": "c",
        "image": "registry/app:1",
        "resources": {"requests": {"cpu": "10m"}},
        "ports": [{"containerPort": port, "hostPort": port}],
    }
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": {"app": "web"}},
        "spec": {"nodeName": node_name, "containers": [container]},
    }


@st.composite
def histories(draw):
    cluster = draw(nodes())
    names = [n["metadata"]["name"] for n in cluster]
    # Other versions of the same nodes (other labels, taints and image sizes) to come back.
    again = {n["metadata"]["name"]: n for n in draw(nodes())}
    bound = draw(pods("bound", 6, node_names=names))
    bound += [
        port_pod(f"port{i}", draw(st.sampled_from(names)), draw(st.sampled_from((80, 443))))
        for i in range(draw(st.integers(0, 4)))
    ]
    late = draw(pods("late", 3, node_names=(*names, "gone")))
    first = draw(pods("q", 4))
    removable = bound + first
    events = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(("remove_pod", "remove_node", "add_node", "add_pod")))
        if kind == "remove_pod":
            events.append(("remove_pod", draw(st.sampled_from(removable))))
        elif kind == "remove_node":
            events.append(("remove_node", draw(st.sampled_from(names))))
        elif kind == "add_node":
            name = draw(st.sampled_from(names))
            events.append(("add_node", again.get(name) if draw(st.booleans()) else None, name))
        elif kind == "add_pod" and late:
            events.append(("add_pod", late.pop()))
    burst = draw(pods("p", 8))
    return cluster, bound, first, events, burst, draw(profiles)


def replay(cluster, bound, first, events) -> tuple[ClusterState, Cache]:
    state, cache = ClusterState(), Cache()
    originals = {n["metadata"]["name"]: n for n in cluster}
    for node in cluster:
        state.add_node(node)
        cache.add_node(node)
    for pod in bound:
        state.add_pod(pod)
        cache.add_pod(pod)
    placed = place_burst(state, first, workloads=WORKLOADS)
    for pod, node_name in zip(first, placed.nodes, strict=True):
        if node_name is not None:
            assumed = copy.deepcopy(pod)
            assumed["spec"]["nodeName"] = node_name
            cache.add_pod(assumed)
    for event in events:
        if event[0] == "remove_pod":
            state.remove_pod(event[1])
            cache.remove_pod(event[1])
        elif event[0] == "remove_node":
            state.remove_node(event[1])
            cache.remove_node(event[1])
        elif event[0] == "add_node":
            node = event[1] or originals[event[2]]
            state.add_node(node)
            cache.add_node(node)
        else:
            state.add_pod(event[1])
            cache.add_pod(event[1])
    for namespace in NAMESPACES:
        state.set_namespace(namespace["metadata"]["name"], namespace["metadata"]["labels"])
    return state, cache


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_kernel_matches_the_reference_after_node_and_pod_events(history):
    cluster, bound, first, events, burst, profile = history
    state, cache = replay(cluster, bound, first, events)
    result = plan(state, burst, profile, workloads=WORKLOADS)
    snapshot = cache.snapshot(NAMESPACES, WORKLOADS)
    reference = ReferenceScheduler.from_snapshot(snapshot, profile)
    expected = reference.place_burst(burst, choose=kernel_choices(result, burst))
    assert_same_outcomes(result, expected)
