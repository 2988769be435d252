"""place_burst / plan on small hand-made clusters: each filter, each score, ties, gangs."""

import pytest

from kubesalvo.core.place import place_burst, plan
from kubesalvo.core.plugins import (
    framework,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    pod_topology_spread,
    taint_toleration,
)
from kubesalvo.core.plugins.coscheduling.gang import GroupKey
from kubesalvo.core.plugins.framework import ResourceSpec
from kubesalvo.core.plugins.node_resources_fit import (
    NodeResourcesFitArgs,
    ScoringStrategy,
    ScoringStrategyType,
    ShapePoint,
)
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.state import ClusterState
from kubesalvo.core.ties import TieBreak


def node(name, cpu="4", memory="8Gi", pods="110", labels=None, taints=None, images=None, **extra):
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": extra.pop("unschedulable", False)},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **extra},
            "images": images or [],
        },
    }


def pod(name, cpu="100m", memory="128Mi", labels=None, image="app:1", ports=(), **spec):
    requests = {"cpu": cpu, "memory": memory, **spec.pop("extra_requests", {})}
    container = {"name": "c", "image": image, "resources": {"requests": requests}}
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels or {}},
        "spec": {"containers": [container], **spec},
    }


def cluster(*nodes):
    state = ClusterState()
    for n in nodes:
        state.add_node(n)
    return state


def test_least_allocated_prefers_the_emptier_node_and_commit_assumes_it():
    state = cluster(node("small", cpu="2"), node("big", cpu="8"))
    result = place_burst(state, [pod("p", cpu="1")])
    assert result.nodes == ["big"]
    assert result.messages == ["Successfully assigned ns/p to big"]
    assert state.requested[state.row_of["big"], 0] == 1000
    assert "p" in state.pods and state.pods["p"].assumed


def nominated(p, node_name):
    return {**p, "status": {"nominatedNodeName": node_name}}


def test_a_pod_takes_its_nominated_node_when_it_passes_every_filter():
    state = cluster(node("small", cpu="2"), node("big", cpu="8"))
    pods = [nominated(pod("p", cpu="1"), "small"), pod("q", cpu="1")]
    result = place_burst(state, pods)
    assert result.nodes == ["small", "big"]


def test_a_nominated_node_that_fails_a_filter_is_passed_over():
    state = cluster(node("small", cpu="2"), node("big", cpu="8"), node("tainted", cpu="16"))
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    state.update_node(node("tainted", cpu="16", taints=[taint]))
    pods = [
        nominated(pod("too-big", cpu="3"), "small"),  # Insufficient cpu there
        nominated(pod("untolerated", cpu="1"), "tainted"),
        nominated(pod("gone", cpu="1"), "no-such-node"),
    ]
    without = [{k: v for k, v in p.items() if k != "status"} for p in pods]
    expected = plan(state, without).nodes
    assert "tainted" not in expected and expected[0] == "big"
    assert place_burst(state, pods).nodes == expected  # as if no node had been nominated


def test_a_nominated_node_is_checked_against_hard_spread():
    zone = "topology.kubernetes.io/zone"
    state = cluster(node("a1", labels={zone: "a"}), node("b1", labels={zone: "b"}))
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": zone,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "w"}},
        }
    ]
    first = pod("w1", labels={"app": "w"}, topologySpreadConstraints=spread)
    second = nominated(pod("w2", labels={"app": "w"}, topologySpreadConstraints=spread), "a1")
    result = place_burst(state, [nominated(first, "a1"), second])
    assert result.nodes == ["a1", "b1"]  # a second pod in zone a would skew 2


def test_plan_does_not_change_the_state():
    state = cluster(node("a"))
    result = plan(state, [pod("p", cpu="1")])
    assert result.nodes == ["a"] and state.requested.sum() == 0 and state.pods == {}


def test_each_placement_is_seen_by_the_next_pod():
    state = cluster(node("a", cpu="1"), node("b", cpu="1"))
    result = place_burst(state, [pod(f"p{i}", cpu="600m") for i in range(3)])
    assert sorted(result.nodes[:2]) == ["a", "b"] and result.nodes[2] is None
    assert result.messages[2] == "0/2 nodes are available: 2 Insufficient cpu."


def test_identical_pods_on_identical_nodes_are_drawn_among_all_of_them():
    # Nothing tells the four nodes apart, before or after a placement: each pod is drawn
    # among the four (kube-scheduler's selectHost), so the burst does not pile on one.
    state = cluster(*(node(f"n{i}") for i in range(4)))
    pods = [pod(f"p{i}", cpu="0", memory="0") for i in range(4)]
    used, spread = set(), 0
    for seed in range(20):
        result = plan(state, pods, ties=TieBreak(seed))
        assert result.ties == [4, 4, 4, 4]
        assert set(result.nodes) <= {"n0", "n1", "n2", "n3"}
        spread += len(set(result.nodes)) >= 2
        used |= set(result.nodes)
    # every pod on one node has chance 1/64 of the draws: a seed or two at most
    assert spread >= 18
    assert used == {"n0", "n1", "n2", "n3"}


def test_failure_counts_first_failing_filter_per_node_and_every_missing_resource():
    state = cluster(
        node("cordoned", unschedulable=True),
        node("tainted", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        node("wrong-zone", labels={"zone": "b"}),
        node("full", cpu="1", memory="1Gi", labels={"zone": "a"}),
        node("few-pods", pods="0", labels={"zone": "a"}),
    )
    big = pod("p", cpu="2", memory="2Gi", nodeSelector={"zone": "a"})
    result = plan(state, [big])
    assert result.reason_counts[0] == {
        node_unschedulable.ERR_REASON_UNSCHEDULABLE: 1,
        taint_toleration.ERR_REASON_UNTOLERATED_TAINT: 1,
        node_affinity.ERR_REASON_NODE_AFFINITY: 1,
        "Insufficient cpu": 1,
        "Insufficient memory": 1,
        node_resources_fit.ERR_REASON_TOO_MANY_PODS: 1,
    }
    assert result.messages[0].startswith("0/5 nodes are available: 1 Insufficient cpu, ")
    # The plugins that rejected it come from the reason codes, not from the texts.
    assert result.rejectors[0] == {
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
    }
    assert result.prefilter_rejector[0] == ""


def test_extended_resource_absent_on_a_node_rejects_only_pods_asking_for_it():
    state = cluster(node("cpu-only"), node("gpu", **{"nvidia.com/gpu": "1"}))
    result = plan(
        state,
        [
            pod("g", extra_requests={"nvidia.com/gpu": "1"}),
            pod("g2", extra_requests={"nvidia.com/gpu": "1"}),
        ],
    )
    assert result.nodes == ["gpu", None]
    assert result.reason_counts[1] == {"Insufficient nvidia.com/gpu": 2}


def test_tolerations_admit_tainted_nodes_and_prefer_no_schedule_scores_lower():
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    soft = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
    state = cluster(
        node("tainted", taints=[taint]), node("spot", cpu="8", taints=[soft]), node("plain")
    )
    tolerating = pod("t", tolerations=[{"key": "dedicated", "operator": "Exists"}])
    result = plan(state, [tolerating, pod("q")])
    assert result.nodes[1] == "plain"  # spot is emptier but has a PreferNoSchedule taint
    everything = pod("e", tolerations=[{"operator": "Exists"}])
    assert plan(cluster(node("tainted", taints=[taint])), [everything]).nodes == ["tainted"]


def test_node_affinity_operators_including_gt_lt_on_non_numeric_labels():
    state = cluster(
        node("gen4", labels={"gen": "4"}),
        node("gen6", labels={"gen": "6"}),
        node("text", labels={"gen": "six"}),
    )
    term = {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["5"]}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    result = plan(state, [pod("p", affinity=affinity)])
    assert result.nodes == ["gen6"]
    assert result.reason_counts == [{}]
    absent = {"matchExpressions": [{"key": "gen", "operator": "DoesNotExist"}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [absent]}
        }
    }
    assert plan(state, [pod("p", affinity=affinity)]).reason_counts[0] == {
        node_affinity.ERR_REASON_NODE_AFFINITY: 3
    }


def test_preferred_node_affinity_wins_over_a_slightly_emptier_node():
    state = cluster(node("preferred", labels={"disk": "ssd"}), node("other", cpu="5"))
    pref = {
        "weight": 50,
        "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
    }
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref]}}
    assert plan(state, [pod("p", affinity=affinity)]).nodes == ["preferred"]


def test_metadata_name_pinning_narrows_and_conflict_rejects():
    state = cluster(node("a"), node("b"), node("c"))

    def pinned(*terms):
        return {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }

    in_b = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}
    result = plan(state, [pod("p", affinity=pinned(in_b), cpu="8")])
    assert result.reason_counts[0] == {
        framework.prefilter_narrowing_reason(["NodeAffinity"]): 2,
        "Insufficient cpu": 1,
    }
    assert result.rejectors[0] == {"NodeAffinity", "NodeResourcesFit"}
    both = {
        "matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["a"]},
            {"key": "metadata.name", "operator": "In", "values": ["b"]},
        ]
    }
    result = plan(state, [pod("p", affinity=pinned(both))])
    assert result.messages[0] == "0/3 nodes are available: pod affinity terms conflict."


def test_node_name_and_host_ports():
    state = cluster(node("a"), node("b"))
    result = plan(state, [pod("x", ports=(80,), nodeName="b"), pod("y", ports=(80,), nodeName="b")])
    assert result.nodes == ["b", None]
    assert result.reason_counts[1] == {
        node_name.ERR_REASON_NODE_NAME: 1,
        node_ports.ERR_REASON_NODE_PORTS: 1,
    }
    assert result.rejectors == [frozenset(), {"NodeName", "NodePorts"}]


def test_image_locality_prefers_the_node_with_the_big_image():
    image = {"names": ["registry/app:1"], "sizeBytes": 900 * 1024 * 1024}
    state = cluster(node("cold", cpu="5"), node("warm", images=[image]), node("cold2", cpu="5"))
    assert plan(state, [pod("p", image="registry/app:1")]).nodes == ["warm"]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (ScoringStrategy(ScoringStrategyType.MOST_ALLOCATED), "busy"),
        (
            ScoringStrategy(
                ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO,
                (ResourceSpec("cpu", 1),),
                (ShapePoint(0, 0), ShapePoint(100, 10)),
            ),
            "busy",
        ),
        (ScoringStrategy(ScoringStrategyType.LEAST_ALLOCATED), "idle"),
    ],
)
def test_scoring_strategies_choose_bin_packing_or_spreading(strategy, expected):
    state = cluster(node("busy"), node("idle"))
    place_burst(state, [pod("seed", cpu="2", nodeName="busy")])
    profile = Profile(fit=NodeResourcesFitArgs(scoring_strategy=strategy))
    assert plan(state, [pod("p", cpu="500m")], profile).nodes == [expected]


def test_gang_below_its_minimum_is_rolled_back_whole():
    state = cluster(node("a", cpu="1"))
    members = [
        pod(f"g{i}", cpu="400m", labels={"podGroup": "g", "minAvailable": "3"}) for i in range(3)
    ]
    result = place_burst(state, [*members, pod("solo", cpu="400m")])
    assert result.nodes == [None, None, None, "a"]
    assert result.rolled_back.tolist() == [True, True, False, False]
    assert "pod group could not reach its minAvailable (ns/g: 2 of 3 placed)" in result.messages[0]
    assert result.reason_counts[2] == {"Insufficient cpu": 1}
    # A gang taken back is unschedulable, not an error: Coscheduling rejected it, with what
    # rejected the member that fit nowhere (room freed there brings the gang back).
    both = {"Coscheduling", "NodeResourcesFit"}
    assert result.rejectors[:3] == [both, both, {"NodeResourcesFit"}]
    assert state.requested[0, 0] == 400


def test_gang_reaching_its_minimum_keeps_its_placements():
    state = cluster(node("a", cpu="1"))
    members = [
        pod(f"g{i}", cpu="400m", labels={"podGroup": "g", "minAvailable": "2"}) for i in range(3)
    ]
    result = place_burst(state, members)
    assert result.nodes == ["a", "a", None]
    assert state.requested[0, 0] == 800


def test_gang_needed_counts_members_already_bound():
    # 3 of minAvailable 5 are bound elsewhere: 2 more must fit, and 2 do.
    state = cluster(node("a", cpu="1"))
    labels = {"podGroup": "g", "minAvailable": "5"}
    members = [pod(f"g{i}", cpu="400m", labels=labels) for i in range(3)]
    result = plan(state, members, gang_needed={GroupKey("ns", "g"): 2})
    assert result.nodes == ["a", "a", None]
    assert not result.rolled_back.any()
    # 3 more needed and only 2 fit: the whole burst's part of the gang is taken back
    result = plan(state, members, gang_needed={GroupKey("ns", "g"): 3})
    assert result.nodes == [None, None, None]
    assert "(ns/g: 2 of 3 placed)" in result.messages[0]
    # complete already: the members are placed one by one, as far as room goes
    result = plan(state, members, gang_needed={GroupKey("ns", "g"): 0})
    assert result.nodes == ["a", "a", None]


def test_removed_node_rows_are_not_counted():
    state = cluster(node("a"), node("b"))
    state.remove_node("a")
    result = plan(state, [pod("p", cpu="9")])
    assert result.messages[0] == "0/1 nodes are available: 1 Insufficient cpu."


ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def zoned(name, zone, **kw):
    labels = {HOST: name}
    if zone:
        labels[ZONE] = zone
    return node(name, labels=labels, **kw)


def spread(key, skew=1, hard=True, app="web", **extra):
    return {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": app}},
        **extra,
    }


def test_hard_zone_spread_alternates_zones_and_reports_skew():
    state = cluster(
        zoned("a1", "a", cpu="8"), zoned("a2", "a", cpu="8"), zoned("b1", "b", cpu="500m")
    )
    pods = [
        pod(f"w{i}", labels={"app": "web"}, cpu="300m", topologySpreadConstraints=[spread(ZONE)])
        for i in range(4)
    ]
    result = plan(state, pods)
    zones = ["b" if n == "b1" else "a" for n in result.nodes[:3]]
    assert sorted(zones) == ["a", "a", "b"]
    assert result.nodes[3] is None
    assert result.reason_counts[3] == {
        "Insufficient cpu": 1,
        pod_topology_spread.ERR_REASON_SPREAD_CONSTRAINTS: 2,
    }
    assert result.rejectors[3] == {"NodeResourcesFit", "PodTopologySpread"}


def test_min_domains_counts_missing_domains_as_empty():
    state = cluster(zoned("a1", "a"), zoned("b1", "b"))
    constraint = spread(ZONE, minDomains=3)
    pods = [
        pod(f"w{i}", labels={"app": "web"}, topologySpreadConstraints=[constraint])
        for i in range(3)
    ]
    result = plan(state, pods)
    assert sorted(result.nodes[:2]) == ["a1", "b1"] and result.nodes[2] is None
    assert result.reason_counts[2] == {pod_topology_spread.ERR_REASON_SPREAD_CONSTRAINTS: 2}


def test_node_without_the_topology_key_fails_hard_spread_as_unresolvable():
    state = cluster(zoned("a1", "a"), zoned("nozone", None, cpu="64"))
    result = plan(
        state, [pod("w", labels={"app": "web"}, cpu="8", topologySpreadConstraints=[spread(ZONE)])]
    )
    assert result.reason_counts[0] == {
        "Insufficient cpu": 1,
        pod_topology_spread.ERR_REASON_SPREAD_MISSING_LABEL: 1,
    }


def test_soft_zone_spread_prefers_the_zone_with_fewer_matching_pods():
    state = cluster(zoned("a1", "a", cpu="16"), zoned("b1", "b"))
    place_burst(state, [pod("old", labels={"app": "web"}, nodeName="b1")])
    new = pod("new", labels={"app": "web"}, topologySpreadConstraints=[spread(ZONE, hard=False)])
    assert plan(state, [new]).nodes == ["a1"]
    other = pod("other", labels={"app": "web"})  # without the constraint: only resources count
    state2 = cluster(zoned("a1", "a"), zoned("b1", "b", cpu="16", memory="64Gi"))
    place_burst(state2, [pod("old", labels={"app": "web"}, nodeName="b1")])
    assert plan(state2, [other]).nodes == ["b1"]
    assert plan(state2, [new]).nodes == ["a1"]


def anti(app, key=HOST):
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": key, "labelSelector": {"matchLabels": {"app": app}}}
            ]
        }
    }


def test_required_anti_affinity_keeps_replicas_on_distinct_hosts():
    state = cluster(zoned("a1", "a"), zoned("a2", "a"))
    pods = [pod(f"w{i}", labels={"app": "web"}, affinity=anti("web")) for i in range(3)]
    result = place_burst(state, pods)
    assert sorted(result.nodes[:2]) == ["a1", "a2"] and result.nodes[2] is None
    assert result.reason_counts[2] == {inter_pod_affinity.ERR_REASON_ANTI_AFFINITY: 2}
    assert result.rejectors[2] == {"InterPodAffinity"}


def test_existing_pods_anti_affinity_rejects_pods_it_selects():
    state = cluster(zoned("a1", "a"), zoned("b1", "b"))
    place_burst(
        state, [pod("guard", labels={"app": "guard"}, nodeName="a1", affinity=anti("web", ZONE))]
    )
    result = plan(state, [pod("w", labels={"app": "web"}, nodeName="a1")])
    assert result.reason_counts[0] == {
        node_name.ERR_REASON_NODE_NAME: 1,
        inter_pod_affinity.ERR_REASON_EXISTING_ANTI_AFFINITY: 1,
    }
    assert result.rejectors[0] == {"NodeName", "InterPodAffinity"}
    assert plan(state, [pod("w", labels={"app": "web"})]).nodes == ["b1"]


def test_required_affinity_lets_the_first_pod_of_a_self_affine_group_start_it():
    state = cluster(zoned("a1", "a"), zoned("b1", "b"))
    together = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "web"}}}
            ]
        }
    }
    pods = [pod(f"w{i}", labels={"app": "web"}, affinity=together) for i in range(3)]
    result = plan(state, pods)
    assert result.nodes[0] is not None
    assert set(result.nodes) == {result.nodes[0]}  # the rest follow it into its zone
    lonely = pod("x", labels={"app": "x"}, affinity=together | {})
    lonely["spec"]["affinity"] = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "db"}}}
            ]
        }
    }
    assert plan(state, [lonely]).reason_counts[0] == {inter_pod_affinity.ERR_REASON_AFFINITY: 2}


def test_preferred_affinity_pulls_towards_the_selected_pods():
    state = cluster(zoned("a1", "a", cpu="16"), zoned("b1", "b"))
    place_burst(state, [pod("db", labels={"app": "db"}, nodeName="b1")])
    near_db = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": ZONE,
                        "labelSelector": {"matchLabels": {"app": "db"}},
                    },
                }
            ]
        }
    }
    assert plan(state, [pod("w", labels={"app": "web"}, affinity=near_db)]).nodes == ["b1"]
    assert plan(state, [pod("w", labels={"app": "web"})]).nodes == ["a1"]


def test_placing_a_pod_the_state_counts_already_moves_it():
    state = cluster(node("a", cpu="2"), node("b", cpu="8"))
    state.add_pod({**pod("p", cpu="1"), "spec": {**pod("p", cpu="1")["spec"], "nodeName": "a"}})
    result = place_burst(state, [pod("p", cpu="1"), pod("q", cpu="1")])
    assert result.nodes[0] == "b"
    row_a, row_b = state.row_of["a"], state.row_of["b"]
    assert state.requested[row_a, 0] == 0
    assert state.requested[row_b, 0] + state.requested[row_a, 0] == 2000


def test_without_any_node_every_pod_fails_with_kube_schedulers_no_nodes_error():
    """schedulePod's ErrNoNodesAvailable: an error before any plugin, not a fit error."""
    state = ClusterState()
    node = {
        "metadata": {"name": "gone", "labels": {"kubernetes.io/hostname": "gone"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    state.add_node(node)
    state.remove_node("gone")  # rows may remain; nodes do not
    bad = {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}
    pods = [
        {"metadata": {"name": "plain", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]}},
        {
            "metadata": {"name": "invalid", "namespace": "ns", "labels": {"app": "x"}},
            "spec": {
                "containers": [{"name": "c"}],
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"topologyKey": "kubernetes.io/hostname", "labelSelector": bad}
                        ]
                    }
                },
            },
        },
    ]
    result = place_burst(state, pods)
    text = framework.ERR_NO_NODES_AVAILABLE
    assert result.nodes == [None, None]
    assert result.errors == [text, text] and result.messages == [text, text]
    assert result.reason_counts == [{}, {}]
    expected = ReferenceScheduler([]).place_burst(pods)
    assert [(r.error, r.message, r.reason_counts) for r in expected] == [(True, text, {})] * 2
