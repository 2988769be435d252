"""Workload shapes: deterministic pods with the promised class structure and constraints."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter, defaultdict
from typing import Any

import pytest

from kubesalvo.core.synthetic import (
    make_batch,
    make_nodes,
    make_pods,
    namespace_objects,
    priority_class_objects,
)
from tests.helpers.feasibility import effective_requests, fits_empty_node
from tests.helpers.quantities import parse

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def signature(pod: dict[str, Any]) -> str:
    """Everything that decides where a pod may go: its spec, namespace and labels."""
    meta = pod["metadata"]
    return json.dumps([meta["namespace"], meta["labels"], pod["spec"]], sort_keys=True)


def walk(value: Any):
    """Every dict nested anywhere in ``value``."""
    if isinstance(value, dict):
        yield value
        for child in value.values():
            yield from walk(child)
    elif isinstance(value, list):
        for child in value:
            yield from walk(child)


@pytest.mark.parametrize("shape", ["replicasets", "distinct", "mixed", "gangs"])
def test_same_seed_gives_the_same_pods(shape):
    assert make_pods(800, seed=4, shape=shape) == make_pods(800, seed=4, shape=shape)
    assert make_pods(800, seed=4, shape=shape) != make_pods(800, seed=5, shape=shape)


@pytest.mark.parametrize("shape", ["replicasets", "distinct", "mixed", "gangs"])
def test_pods_are_pending_v1_pods_with_unique_dns_names(shape):
    pods = make_pods(1500, seed=1, shape=shape, scheduler_name="default-scheduler")
    assert len(pods) == 1500
    keys = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}
    assert len(keys) == 1500
    namespaces = {ns["metadata"]["name"] for ns in namespace_objects()}
    for pod in pods:
        assert pod["apiVersion"] == "v1" and pod["kind"] == "Pod"
        assert DNS_LABEL.match(pod["metadata"]["name"]) and len(pod["metadata"]["name"]) <= 63
        assert pod["metadata"]["namespace"] in namespaces
        assert pod["spec"]["schedulerName"] == "default-scheduler"
        assert "nodeName" not in pod["spec"]
        assert pod["spec"]["containers"]


def test_replicasets_are_ten_classes_of_identical_pods():
    pods = make_pods(10_000, seed=0, shape="replicasets", classes=10)
    classes = Counter(signature(p) for p in pods)
    assert sorted(classes.values()) == [1000] * 10
    hashes = {p["metadata"]["labels"]["pod-template-hash"] for p in pods}
    assert len(hashes) == 10


def test_replicasets_split_uneven_counts_over_the_classes():
    batch = make_batch(1003, shape="replicasets", classes=4)
    assert sorted(n for _, n in batch) == [250, 251, 251, 251]


def test_distinct_pods_each_have_their_own_selector_tolerations_and_spread():
    pods = make_pods(2000, seed=0, shape="distinct")
    assert len({signature(p) for p in pods}) == 2000
    tolerations = {json.dumps(p["spec"]["tolerations"], sort_keys=True) for p in pods}
    assert len(tolerations) == 2000
    for pod in pods:
        assert pod["spec"]["nodeSelector"]
        (constraint,) = pod["spec"]["topologySpreadConstraints"]
        assert constraint["labelSelector"]["matchLabels"] == {
            "app": pod["metadata"]["labels"]["app"]
        }


def test_mixed_has_the_promised_share_of_each_kind():
    pods = make_pods(10_000, seed=2, shape="mixed")
    kinds = Counter(p["metadata"]["labels"]["kubesalvo.io/workload"] for p in pods)
    assert kinds["service"] == 5000
    assert kinds["job"] == 2000
    assert kinds["constrained"] == 1790
    assert kinds["inference"] == 30
    # 180 single pods and one impossible gang of 20.
    assert kinds["unschedulable"] == 180 + 20
    # CPU gangs and GPU gangs.
    assert kinds["gang"] == 950 + 30


def test_mixed_uses_every_kind_of_constraint():
    pods = make_pods(5000, seed=3, shape="mixed")
    specs = [p["spec"] for p in pods]
    operators = {
        d["operator"] for s in specs for d in walk(s.get("affinity", {})) if "operator" in d
    }
    assert {"In", "NotIn", "Exists", "Gt"} <= operators
    for kind in ("podAffinity", "podAntiAffinity", "nodeAffinity"):
        for mode in ("required", "preferred"):
            key = f"{mode}DuringSchedulingIgnoredDuringExecution"
            assert any(key in s.get("affinity", {}).get(kind, {}) for s in specs), (kind, mode)
    topology_keys = {
        d["topologyKey"] for s in specs for d in walk(s.get("affinity", {})) if "topologyKey" in d
    }
    assert topology_keys == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
    assert any("namespaceSelector" in d for s in specs for d in walk(s.get("affinity", {})))
    spreads = [c for s in specs for c in s.get("topologySpreadConstraints", [])]
    assert {c["whenUnsatisfiable"] for c in spreads} == {"ScheduleAnyway", "DoNotSchedule"}
    assert any("minDomains" in c for c in spreads)
    assert any("matchLabelKeys" in c for c in spreads)
    assert any("initContainers" in s for s in specs)
    assert any("nodeSelector" in s for s in specs)
    assert any(
        p.get("hostPort") for s in specs for c in s["containers"] for p in c.get("ports", [])
    )
    assert any("nvidia.com/gpu" in effective_requests({"spec": s}) for s in specs)
    assert {s.get("priorityClassName") for s in specs} >= {
        "critical-service",
        "high-priority",
        "batch-low",
        None,
    }
    labels = [p["metadata"]["labels"] for p in pods]
    assert any("groupPriority" in lb for lb in labels)


def test_priorities_agree_with_the_priority_classes():
    values = {pc["metadata"]["name"]: pc["value"] for pc in priority_class_objects()}
    for pod in make_pods(3000, seed=1, shape="mixed"):
        name = pod["spec"].get("priorityClassName")
        if name is None:
            assert "priority" not in pod["spec"]
        else:
            assert pod["spec"]["priority"] == values[name]


def test_gangs_carry_their_group_and_minimum_and_stay_together():
    pods = make_pods(3000, seed=6, shape="gangs")
    groups: dict[str, list[dict]] = defaultdict(list)
    for pod in pods:
        labels = pod["metadata"]["labels"]
        group = labels.get("podGroup") or labels["scheduling.x-k8s.io/pod-group"]
        groups[group].append(pod)
    assert len(groups) > 20
    assert sum("podGroup" in p["metadata"]["labels"] for p in pods) > len(pods) / 2
    assert any("scheduling.x-k8s.io/pod-group" in p["metadata"]["labels"] for p in pods)
    for members in groups.values():
        minimums = {int(p["metadata"]["labels"]["minAvailable"]) for p in members}
        assert len(minimums) == 1
        assert 1 <= minimums.pop() <= len(members)
    # Members of one gang come out together, as their controller creates them.
    order = [p["metadata"]["labels"]["app"] for p in pods]
    changes = sum(1 for a, b in itertools.pairwise(order) if a != b)
    assert changes == len(groups) - 1


def test_quantities_in_every_pod_parse():
    for pod in make_pods(2000, seed=0, shape="mixed"):
        for c in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):
            for section in c["resources"].values():
                for amount in section.values():
                    assert parse(amount) > 0


def test_pods_are_schedulable_on_the_fleet_unless_meant_not_to_be():
    nodes = make_nodes(150, seed=0)
    pods = make_pods(1500, seed=0, shape="mixed")
    stuck = 0
    feasible_by_spec: dict[str, bool] = {}
    for pod in pods:
        meant_stuck = pod["metadata"]["labels"]["kubesalvo.io/workload"] == "unschedulable"
        if effective_requests(pod).get("nvidia.com/gpu", 0) > 4:
            assert meant_stuck, "pods of an impossible gang are labelled unschedulable"
        # Replicas share a spec, and the static filters read only the spec.
        key = json.dumps(pod["spec"], sort_keys=True)
        if key not in feasible_by_spec:
            feasible_by_spec[key] = any(fits_empty_node(pod, node) for node in nodes)
        assert feasible_by_spec[key] != meant_stuck, pod["metadata"]["name"]
        stuck += meant_stuck
    assert 0.015 * len(pods) <= stuck <= 0.03 * len(pods)


@pytest.mark.parametrize("shape", ["replicasets", "distinct", "gangs"])
def test_other_shapes_fit_the_fleet(shape):
    nodes = make_nodes(100, seed=1)
    for pod in make_pods(300, seed=1, shape=shape):
        if pod["metadata"]["labels"]["kubesalvo.io/workload"] == "unschedulable":
            continue  # the gangs shape's impossible gangs
        assert any(fits_empty_node(pod, node) for node in nodes), pod["metadata"]["name"]


def test_replicas_own_their_metadata_and_spec_but_share_the_signature_parts():
    first, second = make_pods(2, seed=0, shape="replicasets", classes=1)
    assert first["spec"] is not second["spec"]
    assert first["metadata"]["labels"] is not second["metadata"]["labels"]
    assert first["spec"]["containers"] is second["spec"]["containers"]
    first["spec"]["nodeName"] = "general-00000"
    first["metadata"]["labels"]["extra"] = "1"
    assert "nodeName" not in second["spec"]
    assert "extra" not in second["metadata"]["labels"]


def test_prefix_keeps_two_bursts_apart():
    a = make_pods(100, seed=0, shape="mixed", prefix="a-")
    b = make_pods(100, seed=0, shape="mixed", prefix="b-")
    names_a = {p["metadata"]["name"] for p in a}
    assert not names_a & {p["metadata"]["name"] for p in b}
    assert all(p["metadata"]["labels"].get("app", "a-").startswith("a-") for p in a)


def test_unknown_shape_and_bad_counts_are_refused():
    with pytest.raises(ValueError, match="unknown workload shape 'burst'; accepted: replicasets"):
        make_pods(10, shape="burst")
    with pytest.raises(ValueError, match="non-negative"):
        make_pods(-5)
    with pytest.raises(ValueError, match="at least one class"):
        make_pods(10, shape="replicasets", classes=0)
