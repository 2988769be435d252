"""DefaultPreemption's decisions on hand-made clusters: eligibility, which nodes are tried,
which pods are evicted (PDBs first reprieved, then by importance), each tie-break of the
node choice, the search bound, nominated pods, and the post-filter messages."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core.plugins import default_preemption, inter_pod_affinity, pod_topology_spread
from kubesalvo.core.preemption import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    PreemptionArgs,
    Preemptor,
    pdb_violating,
    preempt,
)
from kubesalvo.core.reference import ReferenceScheduler

NOW = 1_800_000_000.0


def node(name: str, cpu: str = "4", labels: dict[str, str] | None = None, **spec: Any):
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod(
    name: str,
    priority: int = 0,
    cpu: str = "1",
    on: str | None = None,
    labels: dict[str, str] | None = None,
    started: str | None = "2026-01-01T00:00:00Z",
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu}}}],
        **spec,
    }
    status: dict[str, Any] = {}
    if on:
        body["nodeName"] = on
        if started:
            status["startTime"] = started
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels or {}},
        "spec": body,
        "status": status,
    }


def pdb(name: str, labels: dict[str, str], allowed: int, disrupted: tuple[str, ...] = ()):
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": dict.fromkeys(disrupted, "t")},
    }


def victim_names(decision) -> list[str]:
    return [v["metadata"]["name"] for v in decision.victims]


# --- victims on one node -------------------------------------------------------------


def test_only_as_many_lower_priority_pods_as_needed_are_evicted():
    pods = [pod("low", 1, "2", "n1"), pod("mid", 5, "2", "n1")]
    decision = preempt(pod("high", 10, "2"), [node("n1")], pods, now=NOW)
    assert decision.node == "n1"
    assert victim_names(decision) == ["low"]  # mid, more important, is reprieved first
    assert decision.nominated_node_name == "n1"
    assert decision.pdb_violations == 0 and decision.message == ""


def test_equal_priority_victims_keep_the_one_that_started_earlier():
    pods = [
        pod("young", 1, "2", "n1", started="2026-01-02T00:00:00Z"),
        pod("old", 1, "2", "n1", started="2026-01-01T00:00:00Z"),
    ]
    decision = preempt(pod("high", 10, "2"), [node("n1")], pods, now=NOW)
    assert victim_names(decision) == ["young"]


def test_pods_of_equal_or_higher_priority_are_never_victims():
    pods = [pod("same", 10, "2", "n1"), pod("low", 1, "1", "n1")]
    decision = preempt(pod("high", 10, "3"), [node("n1")], pods, now=NOW)
    assert decision.node is None
    assert decision.message == ("preemption: 0/1 nodes are available: 1 Insufficient cpu.")


def test_victims_are_listed_most_important_first():
    pods = [pod("a", 1, "2", "n1"), pod("b", 3, "2", "n1"), pod("c", 2, "1", "n1")]
    decision = preempt(pod("high", 10, "4"), [node("n1", cpu="5")], pods, now=NOW)
    assert victim_names(decision) == ["b", "a"]  # c (1 cpu) can stay


# --- PodDisruptionBudgets -------------------------------------------------------------


def test_pdb_protected_pods_are_reprieved_before_more_important_ones():
    pods = [
        pod("guarded", 1, "2", "n1", labels={"app": "db"}),
        pod("free", 5, "2", "n1", labels={"app": "web"}),
    ]
    budgets = [pdb("db", {"app": "db"}, allowed=0)]
    decision = preempt(pod("high", 10, "2"), [node("n1")], pods, budgets, now=NOW)
    assert victim_names(decision) == ["free"]
    assert decision.pdb_violations == 0


def test_unavoidable_pdb_violations_are_counted():
    pods = [
        pod("g1", 1, "2", "n1", labels={"app": "db"}),
        pod("g2", 1, "2", "n1", labels={"app": "db"}),
    ]
    budgets = [pdb("db", {"app": "db"}, allowed=1)]
    decision = preempt(pod("high", 10, "4"), [node("n1")], pods, budgets, now=NOW)
    assert sorted(victim_names(decision)) == ["g1", "g2"]
    assert decision.pdb_violations == 1  # the budget allows one of the two


def test_pdb_budget_rules():
    guarded = [pod(f"g{i}", 1, on="n1", labels={"app": "db"}) for i in range(3)]
    # g0 is already counted as disrupted by the budget: it does not spend it.
    violating, others = pdb_violating(guarded, [pdb("db", {"app": "db"}, 1, ("g0",))])
    assert [p["metadata"]["name"] for p in violating] == ["g2"]
    assert [p["metadata"]["name"] for p in others] == ["g0", "g1"]
    # An empty selector selects nothing; so does another namespace, or no labels.
    empty = {**pdb("all", {}, 0)}
    other_ns = pdb("db", {"app": "db"}, 0)
    other_ns["metadata"]["namespace"] = "elsewhere"
    unlabelled = pod("bare", 1, on="n1")
    violating, _ = pdb_violating([*guarded, unlabelled], [empty, other_ns])
    assert violating == []


# --- choosing the node ----------------------------------------------------------------


def test_node_with_fewer_pdb_violations_wins():
    nodes = [node("n1"), node("n2")]
    pods = [
        pod("guarded", 1, "4", "n1", labels={"app": "db"}),
        pod("free", 5, "4", "n2", labels={"app": "web"}),
    ]
    budgets = [pdb("db", {"app": "db"}, allowed=0)]
    decision = preempt(pod("high", 10, "4"), nodes, pods, budgets, now=NOW)
    assert decision.node == "n2" and decision.pdb_violations == 0


def test_node_with_the_lowest_highest_victim_priority_wins():
    nodes = [node("n1"), node("n2")]
    pods = [pod("p5", 5, "4", "n1"), pod("p3", 3, "4", "n2")]
    assert preempt(pod("high", 10, "4"), nodes, pods, now=NOW).node == "n2"


def test_node_with_the_smallest_priority_sum_wins():
    nodes = [node("n1"), node("n2")]
    pods = [
        pod("a3", 3, "2", "n1"),
        pod("a2", 2, "2", "n1"),
        pod("b3", 3, "2", "n2"),
        pod("b1", 1, "2", "n2"),
    ]
    decision = preempt(pod("high", 10, "4"), nodes, pods, now=NOW)
    assert decision.node == "n2" and victim_names(decision) == ["b3", "b1"]


def test_node_with_fewer_victims_wins_when_sums_tie():
    # Each victim counts priority + 2^31: a MinInt32 victim adds 0, so the sums tie.
    nodes = [node("n1"), node("n2")]
    pods = [
        pod("a", 5, "2", "n1"),
        pod("a-min", -(2**31), "2", "n1"),
        pod("b", 5, "4", "n2"),
    ]
    decision = preempt(pod("high", 10, "4"), nodes, pods, now=NOW)
    assert decision.node == "n2" and victim_names(decision) == ["b"]


def test_node_whose_top_victims_started_latest_wins():
    nodes = [node("n1"), node("n2")]
    pods = [
        pod("old", 1, "4", "n1", started="2026-01-01T00:00:00Z"),
        pod("new", 1, "4", "n2", started="2026-01-05T00:00:00Z"),
    ]
    assert preempt(pod("high", 10, "4"), nodes, pods, now=NOW).node == "n2"


def test_a_victim_without_start_time_counts_as_started_now():
    nodes = [node("n1"), node("n2")]
    pods = [pod("running", 1, "4", "n1"), pod("starting", 1, "4", "n2", started=None)]
    assert preempt(pod("high", 10, "4"), nodes, pods, now=NOW).node == "n2"


def test_complete_tie_picks_the_first_candidate_tried():
    nodes = [node("n1"), node("n2"), node("n3")]
    pods = [pod(f"v{i}", 1, "4", f"n{i}") for i in (1, 2, 3)]
    assert preempt(pod("high", 10, "4"), nodes, pods, now=NOW).node == "n1"
    assert preempt(pod("high", 10, "4"), nodes, pods, now=NOW, offset=1).node == "n2"


# --- eligibility and candidate nodes -------------------------------------------------


def test_preemption_policy_never_does_not_preempt():
    high = pod("high", 10, "4", preemptionPolicy="Never")
    decision = preempt(high, [node("n1")], [pod("low", 1, "4", "n1")], now=NOW)
    assert decision.node is None and decision.nominated_node_name is None
    assert decision.message == "preemption: " + NOT_ELIGIBLE_NEVER
    assert decision.message == "preemption: not eligible due to preemptionPolicy=Never."


@pytest.mark.parametrize(
    ("blocked", "why"),
    [
        (node("n1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]), "taint"),
        (node("n1", unschedulable=True), "unschedulable"),
        (node("n1", labels={"pool": "other"}), "selector"),
        (node("n1", cpu="2"), "request above allocatable"),
    ],
)
def test_unresolvable_nodes_are_not_tried(blocked, why):
    high = pod("high", 10, "3", nodeSelector={"kubernetes.io/hostname": "n1"})
    if why == "selector":
        high = pod("high", 10, "3", nodeSelector={"pool": "main"})
    decision = preempt(high, [blocked], [pod("low", 1, "2", "n1")], now=NOW)
    assert decision.node is None and decision.nodes_tried == 0
    assert decision.nominated_node_name == ""  # clears a stale nomination
    assert decision.message == (
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_failure_message_counts_each_node_reason():
    nodes = [
        node("empty-of-victims"),
        node("too-small"),
        node("tainted", taints=[{"key": "k", "effect": "NoSchedule"}]),
    ]
    pods = [
        pod("peer", 10, "4", "empty-of-victims"),
        pod("big", 20, "3", "too-small"),
        pod("small", 1, "1", "too-small"),
    ]
    decision = preempt(pod("high", 10, "2"), nodes, pods, now=NOW)
    assert decision.node is None
    assert decision.message == (
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        f"1 {default_preemption.NO_PREEMPTION_VICTIMS}, "
        f"1 {default_preemption.PREEMPTION_NOT_HELPFUL}."
    )
    assert decision.reason_counts == {
        "Insufficient cpu": 1,
        "No preemption victims found for incoming pod": 1,
        "Preemption is not helpful for scheduling": 1,
    }


def test_terminating_victim_on_the_nominated_node_makes_the_pod_wait():
    leaving = pod("leaving", 1, "2", "n1")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    leaving["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
    high = pod("high", 10, "4")
    high["status"]["nominatedNodeName"] = "n1"
    pods = [leaving, pod("low", 1, "2", "n1")]
    decision = preempt(high, [node("n1")], pods, now=NOW)
    assert decision.node is None and decision.nominated_node_name is None
    assert decision.message == "preemption: " + NOT_ELIGIBLE_TERMINATING
    # A pod deleted for another reason does not hold the preemptor back.
    leaving["status"]["conditions"] = []
    assert preempt(high, [node("n1")], pods, now=NOW).node == "n1"


def test_unresolvable_nominated_node_lets_the_pod_preempt_elsewhere():
    leaving = pod("leaving", 1, "2", "n1")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    leaving["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
    nodes = [node("n1", unschedulable=True), node("n2")]
    high = pod("high", 10, "4")
    high["status"]["nominatedNodeName"] = "n1"
    decision = preempt(high, nodes, [leaving, pod("low", 1, "4", "n2")], now=NOW)
    assert decision.node == "n2" and victim_names(decision) == ["low"]


# --- inter-pod affinity and spread ---------------------------------------------------


def test_low_priority_pod_whose_anti_affinity_repels_the_preemptor_is_evicted():
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "high"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    pods = [pod("loner", 1, "1", "n1", affinity=anti), pod("other", 1, "1", "n1")]
    decision = preempt(pod("high", 10, "1", labels={"app": "high"}), [node("n1")], pods, now=NOW)
    assert decision.node == "n1" and victim_names(decision) == ["loner"]


def test_preemptor_with_anti_affinity_to_low_priority_pods_evicts_them_all():
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "batch"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    pods = [pod(f"b{i}", 1, "1", "n1", labels={"app": "batch"}) for i in range(2)]
    pods.append(pod("keep", 1, "1", "n1"))
    decision = preempt(pod("high", 10, "1", affinity=anti), [node("n1")], pods, now=NOW)
    assert sorted(victim_names(decision)) == ["b0", "b1"]


def test_affinity_to_a_victim_is_not_resolved_by_preemption():
    # Upstream removes every lower-priority pod before checking, so a pod that needs one
    # of them nearby cannot preempt there (a documented limitation kept as is).
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "cache"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    pods = [pod("cache", 1, "2", "n1", labels={"app": "cache"}), pod("filler", 1, "2", "n1")]
    decision = preempt(pod("high", 10, "2", affinity=affinity), [node("n1")], pods, now=NOW)
    assert decision.node is None
    assert decision.message == (
        f"preemption: 0/1 nodes are available: 1 {inter_pod_affinity.ERR_REASON_AFFINITY}."
    )


def test_spread_constraint_is_satisfied_by_evicting_matching_pods():
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    nodes = [node("n1"), node("n2")]
    pods = [
        pod("w1", 1, "1", "n1", labels={"app": "web"}),
        pod("w2", 1, "1", "n1", labels={"app": "web"}),
        pod("full", 20, "4", "n2"),  # n2 holds no web pod but has no room
    ]
    high = pod("high", 10, "1", labels={"app": "web"}, topologySpreadConstraints=spread)
    decision = preempt(high, nodes, pods, now=NOW)
    assert decision.node == "n1"
    # n2 counts 0 web pods, so n1 may hold at most one with the new pod: both must go.
    assert sorted(victim_names(decision)) == ["w1", "w2"]


# --- search bound, nominated pods, commit ---------------------------------------------


def test_search_stops_after_enough_candidates():
    nodes = [node(f"n{i}") for i in range(5)]
    pods = [pod(f"v{i}", 1, "4", f"n{i}") for i in range(5)]
    args = PreemptionArgs(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=2)
    decision = preempt(pod("high", 10, "4"), nodes, pods, args=args, offset=3, now=NOW)
    assert decision.nodes_tried == 2 and decision.node == "n3"
    everything = preempt(pod("high", 10, "4"), nodes, pods, now=NOW)
    assert everything.nodes_tried == 5  # 10% of 5 < 100: every node is a candidate


def test_a_violation_free_candidate_is_sought_past_the_bound():
    nodes = [node("n1"), node("n2"), node("n3")]
    pods = [
        pod("g1", 1, "4", "n1", labels={"app": "db"}),
        pod("g2", 1, "4", "n2", labels={"app": "db"}),
        pod("free", 1, "4", "n3"),
    ]
    args = PreemptionArgs(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=1)
    budgets = [pdb("db", {"app": "db"}, allowed=0)]
    decision = preempt(pod("high", 10, "4"), nodes, pods, budgets, args=args, now=NOW)
    assert decision.node == "n3" and decision.nodes_tried == 3


def test_preemption_args_rules():
    assert PreemptionArgs().num_candidates(50) == 50
    assert PreemptionArgs().num_candidates(5000) == 500
    assert PreemptionArgs(min_candidate_nodes_absolute=0).num_candidates(5) == 0
    with pytest.raises(ValueError, match="both cannot be zero"):
        PreemptionArgs(0, 0)
    with pytest.raises(ValueError, match="minCandidateNodesPercentage"):
        PreemptionArgs(101, 1)


def test_higher_priority_nominated_pods_hold_their_room():
    waiting = pod("waiting", 50, "2")
    waiting["status"]["nominatedNodeName"] = "n1"
    pods = [pod("low", 1, "1", "n1"), pod("low2", 1, "1", "n1"), waiting]
    decision = preempt(pod("high", 10, "2"), [node("n1")], pods, now=NOW)
    assert sorted(victim_names(decision)) == ["low", "low2"]


def test_lower_priority_nominations_on_the_node_are_to_be_cleared():
    waiting = pod("waiting", 2, "1")
    waiting["status"]["nominatedNodeName"] = "n1"
    pods = [pod("low", 1, "4", "n1"), waiting]
    decision = preempt(pod("high", 10, "4"), [node("n1")], pods, now=NOW)
    assert decision.node == "n1"
    assert [p["metadata"]["name"] for p in decision.clear_nominated] == ["waiting"]


def test_commit_lets_the_next_pod_see_the_nomination():
    nodes = [node("n1"), node("n2")]
    pods = [pod("a", 1, "4", "n1"), pod("b", 2, "4", "n2")]
    preemptor = Preemptor(nodes, pods)
    first, second = pod("first", 10, "4"), pod("second", 10, "4")
    decision = preemptor.preempt(first, now=NOW)
    assert decision.node == "n1"
    preemptor.commit(first, decision)
    # n1 is now held by "first" (same priority): "second" must go to n2.
    following = preemptor.preempt(second, now=NOW)
    assert following.node == "n2" and victim_names(following) == ["b"]


def test_the_picture_is_unchanged_by_a_decision():
    pods = [pod("low", 1, "2", "n1"), pod("mid", 5, "2", "n1")]
    preemptor = Preemptor([node("n1")], pods)
    before = [p["metadata"]["name"] for p in preemptor.evaluator.snapshot.by_name["n1"].pods]
    preemptor.preempt(pod("high", 10, "2"), now=NOW)
    after = [p["metadata"]["name"] for p in preemptor.evaluator.snapshot.by_name["n1"].pods]
    assert sorted(before) == sorted(after)
    assert preemptor.evaluator.snapshot.by_name["n1"].requested["cpu"] == 4000


# --- internals: the fast picture equals the reference's ----------------------------------


def _zoned_cluster() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [node(f"z{z}-{i}", labels={"zone": f"z{z}"}) for z in range(3) for i in range(2)]
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
            ]
        }
    }
    pods = []
    for index, host in enumerate(n["metadata"]["name"] for n in nodes):
        pods.append(pod(f"web-{index}", index % 3, "1", host, labels={"app": "web"}))
        if index < 2:  # zone z0 holds two more web pods: spread is tight there
            pods.append(pod(f"web-extra-{index}", 1, "1", host, labels={"app": "web"}))
        if index % 2 == 0:  # one db pod per zone
            pods.append(pod(f"db-{index}", 1, "1", host, labels={"app": "db"}))
        if index == 3:
            pods.append(pod("lonely", 2, "1", host, labels={"app": "x"}, affinity=anti))
    return nodes, pods


def test_incremental_counts_match_a_rebuilt_reference():
    from kubesalvo.core.preemption import _NodeFilters

    nodes, pods = _zoned_cluster()
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
            ]
        }
    }
    incoming = [
        pod("web", 10, "1", labels={"app": "web"}, topologySpreadConstraints=spread),
        pod("near-db", 10, "1", labels={"app": "y"}, affinity=affinity),
        pod(
            "both",
            10,
            "1",
            labels={"app": "web"},
            topologySpreadConstraints=spread,
            affinity=affinity,
        ),
    ]
    seen: set[tuple[str, ...] | None] = set()
    preemptor = Preemptor(nodes, pods)
    for incoming_pod in incoming:
        for info in preemptor.evaluator.snapshot.nodes:
            for gone in list(info.pods):
                filters = _NodeFilters(
                    preemptor.evaluator, incoming_pod, preemptor.anti_affinity_anywhere
                )
                filters.focus(info)
                info.remove_pod(gone)
                try:
                    filters.refresh(info)
                    fast = filters.status(info)
                finally:
                    info.add_pod(gone)
                rest = [p for p in pods if p is not gone]
                expected = (
                    ReferenceScheduler(nodes, rest).evaluate(incoming_pod).statuses[info.name]
                )
                assert fast == expected, (incoming_pod["metadata"]["name"], info.name)
                seen.add(expected.reasons if expected else None)
    # Every kind of outcome was met: removals that help and ones that do not.
    assert seen == {
        None,
        (pod_topology_spread.ERR_REASON_SPREAD_CONSTRAINTS,),
        (inter_pod_affinity.ERR_REASON_AFFINITY,),
        (inter_pod_affinity.ERR_REASON_EXISTING_ANTI_AFFINITY,),
    }


def test_fast_node_bookkeeping_matches_the_reference_node_info():
    from kubesalvo.core.pernode.snapshot import Snapshot

    busy = pod(
        "busy",
        1,
        "500m",
        "n1",
        overhead={"cpu": "100m"},
        initContainers=[
            {
                "name": "init",
                "image": "i",
                "resources": {"requests": {"cpu": "2", "memory": "1Gi"}},
            },
            {
                "name": "side",
                "image": "s",
                "restartPolicy": "Always",
                "ports": [{"containerPort": 80, "hostPort": 8080}],
            },
        ],
    )
    pods = [busy, pod("plain", 1, "250m", "n1"), pod("done", 1, "1", "n1")]
    pods[2]["status"]["phase"] = "Succeeded"
    fast = Preemptor([node("n1")], pods).evaluator.snapshot.by_name["n1"]
    slow = Snapshot.build([node("n1")], pods).by_name["n1"]
    for info in (fast, slow):
        info.remove_pod(pods[1])
    assert fast.requested == slow.requested and fast.allocatable == slow.allocatable
    assert (fast.nonzero_cpu, fast.nonzero_memory) == (slow.nonzero_cpu, slow.nonzero_memory)
    assert fast.used_ports == slow.used_ports and fast.pods == slow.pods


# --- properties on random clusters ---------------------------------------------------

_REPEL = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "new"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


@st.composite
def clusters(draw):
    count = draw(st.integers(1, 4))
    nodes = [node(f"n{i}", cpu=str(draw(st.integers(2, 6)))) for i in range(count)]
    pods = []
    # At most one pod per node holds the host port, as NodePorts guarantees (a node's
    # used ports are a set upstream: a second holder would be forgotten on removal).
    port_held: set[str] = set()
    for i in range(draw(st.integers(0, 12))):
        extra: dict[str, Any] = {}
        host = f"n{draw(st.integers(0, count - 1))}"
        if draw(st.booleans()) and draw(st.booleans()):
            extra["affinity"] = _REPEL
        if host not in port_held and draw(st.integers(0, 5)) == 0:
            port_held.add(host)
            extra["containers"] = [
                {
                    "name": "c",
                    "image": "app",
                    "resources": {"requests": {"cpu": "500m"}},
                    "ports": [{"containerPort": 80, "hostPort": 8080}],
                }
            ]
        pods.append(
            pod(
                f"p{i}",
                draw(st.integers(0, 20)),
                f"{draw(st.integers(1, 4)) * 500}m",
                host,
                labels={"app": draw(st.sampled_from(["a", "b"]))},
                started=f"2026-01-0{draw(st.integers(1, 9))}T00:00:00Z",
                **extra,
            )
        )
    wants_port = draw(st.booleans())
    incoming = pod(
        "new", draw(st.integers(5, 25)), f"{draw(st.integers(1, 8)) * 500}m", labels={"app": "new"}
    )
    if wants_port:
        incoming["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    return nodes, pods, incoming


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_victims_are_lower_priority_sufficient_and_each_one_needed(cluster):
    nodes, pods, incoming = cluster
    decision = preempt(incoming, nodes, pods, now=NOW)
    if decision.node is None:
        return
    priority = incoming["spec"]["priority"]
    assert decision.victims and all(v["spec"]["priority"] < priority for v in decision.victims)
    assert all(v["spec"]["nodeName"] == decision.node for v in decision.victims)
    rest = [p for p in pods if not any(p is v for v in decision.victims)]
    assert ReferenceScheduler(nodes, rest).filter(incoming)[decision.node] == []
    for victim in decision.victims:
        back = [*rest, victim]
        assert ReferenceScheduler(nodes, back).filter(incoming)[decision.node] != []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_a_node_is_found_exactly_when_evicting_lower_priority_pods_can_help(cluster):
    nodes, pods, incoming = cluster
    if any(not r for r in ReferenceScheduler(nodes, pods).filter(incoming).values()):
        return  # preemption is only asked for pods that fit nowhere
    decision = preempt(incoming, nodes, pods, now=NOW)
    priority = incoming["spec"]["priority"]
    # Every lower-priority pod gone from one node at a time (other nodes untouched).
    helpful = []
    for n in nodes:
        name = n["metadata"]["name"]
        kept = [
            p for p in pods if p["spec"]["nodeName"] != name or p["spec"]["priority"] >= priority
        ]
        if len(kept) < len(pods) and ReferenceScheduler(nodes, kept).filter(incoming)[name] == []:
            helpful.append(name)
    assert (decision.node is not None) == bool(helpful)
    assert decision.node is None or decision.node in helpful
    if decision.node is None:
        assert decision.message.startswith(f"preemption: 0/{len(nodes)} nodes are available: ")


def test_a_pod_with_claims_preempts_only_where_its_devices_can_be_allocated():
    # Both nodes are full of lower-priority pods; the claims fit only on n2. DynamicResources'
    # verdicts from the pod's cycle are the dry run's for that plugin: n1 fails on cpu first
    # (so it is tried, as upstream tries it) and, its victims removed, on the claims.
    claims = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    high = pod("high", 10, "2", resourceClaims=claims)
    pods = [pod("low-1", 1, "4", "n1"), pod("low-2", 1, "4", "n2")]
    preemptor = Preemptor([node("n1"), node("n2")], pods)
    preemptor.evaluator.device_failures = {"uid-high": {"n1": "cannot allocate all claims"}}
    decision = preemptor.preempt(high, now=NOW)
    assert decision.node == "n2" and victim_names(decision) == ["low-2"]
    # Claims unallocatable everywhere: each node, its victims removed, still fails on them
    # (the dry run's filter status is the node's reason), and nothing is evicted.
    preemptor.evaluator.device_failures = {
        "uid-high": dict.fromkeys(("n1", "n2"), "cannot allocate all claims")
    }
    decision = preemptor.preempt(high, now=NOW)
    assert decision.node is None and decision.victims == []
    assert decision.message == "preemption: 0/2 nodes are available: 2 cannot allocate all claims."
    # Where the claims fail before any other filter, the node is not even tried.
    roomy = Preemptor([node("n1", cpu="8")], [pod("low-1", 1, "4", "n1")])
    roomy.evaluator.device_failures = {"uid-high": {"n1": "cannot allocate all claims"}}
    decision = roomy.preempt(high, now=NOW)
    assert decision.nodes_tried == 0
    assert decision.message == (
        f"preemption: 0/1 nodes are available: 1 {default_preemption.PREEMPTION_NOT_HELPFUL}."
    )
