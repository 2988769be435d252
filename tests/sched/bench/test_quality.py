"""Placement quality: nodes used, the spread of cpu shares, imbalance and skew per owner."""

from __future__ import annotations

from typing import Any

import pytest

from kubesalvo.sched.bench.quality import ZONE, measure


def node(name: str, zone: str | None = None, cpu: str = "4", memory: str = "4Gi") -> dict:
    labels = {ZONE: zone} if zone else {}
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def pod(name: str, node_name: str, owner: str = "rs-a", cpu: str = "1", memory: str = "1Gi"):
    container = {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if owner:
        meta["ownerReferences"] = [
            {"kind": "ReplicaSet", "name": owner, "uid": f"uid-{owner}", "controller": True}
        ]
    return {
        "metadata": meta,
        "spec": {"nodeName": node_name, "containers": [container]},
        "status": {"phase": "Running"},
    }


def keys(pods) -> set[str]:
    return {f"ns/{p['metadata']['name']}" for p in pods}


def test_an_even_spread_has_no_skew_and_no_spread_of_shares() -> None:
    nodes = [node(f"n{i}", zone=f"z{i % 2}") for i in range(4)]
    pods = [pod(f"p{i}", f"n{i}") for i in range(4)]
    q = measure(nodes, pods, keys(pods))
    assert q == {
        "nodes_used": 4,
        "cpu_share_sd": 0.0,
        "imbalance": 0.0,
        "zone_skew": 0,
        "node_skew": 0,
    }


def test_packing_one_node_shows_in_the_shares_and_the_skew() -> None:
    nodes = [node(f"n{i}", zone=f"z{i % 2}") for i in range(4)]
    pods = [pod(f"p{i}", "n0") for i in range(4)]
    q = measure(nodes, pods, keys(pods))
    # n0 at 100% cpu, the three others at 0%: mean 25, sd sqrt((75² + 3 x 25²) / 4).
    assert q["nodes_used"] == 1
    assert q["cpu_share_sd"] == pytest.approx(43.3, abs=0.01)
    assert (q["zone_skew"], q["node_skew"]) == (4, 4)


def test_imbalance_is_the_gap_between_cpu_and_memory_shares_of_used_nodes() -> None:
    pods = [pod("p", "n0", cpu="2", memory="1Gi")]  # 50% cpu, 25% memory
    q = measure([node("n0"), node("n1")], pods, keys(pods))
    assert q["imbalance"] == 25.0
    assert q["zone_skew"] is None  # no zone labels


def test_other_pods_load_the_nodes_but_only_the_runs_pods_are_judged() -> None:
    nodes = [node("n0", "za"), node("n1", "zb")]
    others = [pod("old", "n1", owner="other", cpu="4")]
    run = [pod("p0", "n0"), pod("p1", "n0")]
    q = measure(nodes, others + run, keys(run))
    assert q["nodes_used"] == 1
    assert q["cpu_share_sd"] == 25.0  # 50% and 100%
    assert q["zone_skew"] == 2


def test_each_owner_is_judged_apart_and_the_worst_is_given() -> None:
    nodes = [node("n0", "za"), node("n1", "zb")]
    pods = [pod("a0", "n0", "rs-a"), pod("a1", "n1", "rs-a"), pod("b0", "n0", "rs-b"),
            pod("b1", "n0", "rs-b"), pod("b2", "n0", "rs-b")]  # fmt: skip
    q = measure(nodes, pods, keys(pods))
    assert q["zone_skew"] == 3 and q["node_skew"] == 3


def test_unbound_and_finished_pods_are_left_out() -> None:
    done = pod("done", "n0")
    done["status"]["phase"] = "Succeeded"
    q = measure([node("n0")], [done, pod("waiting", "")], {"ns/done", "ns/waiting"})
    assert q["nodes_used"] == 0 and q["imbalance"] == 0.0
