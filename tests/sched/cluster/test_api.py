"""The pure parts of the bulk client: resource paths and watch conditions."""

from __future__ import annotations

from typing import Any

from kubesalvo.sched.cluster.api import ApiResource, Matching, is_ready, pod_running


def node(name: str, ready: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def test_resource_paths_for_core_grouped_and_namespaced_kinds() -> None:
    assert ApiResource("v1", "nodes", False).collection(None) == "/api/v1/nodes"
    assert ApiResource("v1", "pods", True).collection("ns") == "/api/v1/namespaces/ns/pods"
    assert ApiResource("apps/v1", "deployments", True).collection(None) == (
        "/apis/apps/v1/namespaces/default/deployments"
    )
    assert ApiResource("scheduling.k8s.io/v1", "priorityclasses", False).collection("x") == (
        "/apis/scheduling.k8s.io/v1/priorityclasses"
    )


def test_matching_named_objects_tracks_changes_and_deletions() -> None:
    condition = Matching(is_ready, names=["a", "b"])
    condition.observe("a", node("a", "True"))
    condition.observe("other", node("other", "True"))
    assert not condition.met
    condition.observe("b", node("b", "True"))
    assert condition.met
    condition.observe("b", node("b", "False"))
    assert not condition.met
    condition.observe("b", node("b", "True"))
    condition.observe("a", None)
    assert not condition.met
    assert str(condition) == "1/2 objects matched"


def test_matching_by_count_and_reset() -> None:
    condition = Matching(pod_running, count=2)
    condition.observe("ns/p1", {"status": {"phase": "Running"}})
    condition.observe("ns/p2", {"status": {"phase": "Pending"}})
    assert not condition.met
    condition.observe("ns/p2", {"status": {"phase": "Running"}})
    assert condition.met
    condition.reset()
    assert not condition.met


def test_node_without_conditions_is_not_ready() -> None:
    assert not is_ready({"metadata": {"name": "n"}, "status": {}})
    assert not is_ready({"metadata": {"name": "n"}})
