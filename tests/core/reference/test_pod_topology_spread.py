"""PodTopologySpread: hard constraints (skew, minDomains, policies) and the soft score."""

from kubesalvo.core.plugins import framework, pod_topology_spread
from kubesalvo.core.plugins.pod_topology_spread import DefaultConstraint, PodTopologySpreadArgs
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler

from .builders import node, pod, zones

ZONE = "topology.kubernetes.io/zone"
WEB = {"matchLabels": {"app": "web"}}


def spread(max_skew=1, key=ZONE, when="DoNotSchedule", selector=WEB, **extra):
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": selector,
        **extra,
    }


def web(name, node_name, namespace="default", **labels):
    return pod(name, namespace, {"app": "web", **labels}, node_name=node_name)


def feasible(ref, p):
    return sorted(n for n, reasons in ref.filter(p).items() if not reasons)


# z0: 2 web pods, z1: 1, z2: 0
PLACED = [web("a", "z0-0"), web("b", "z0-1"), web("c", "z1-0")]


def test_skew_counts_the_pod_itself_against_the_emptiest_domain():
    ref = ReferenceScheduler(zones(3, 2), PLACED)
    p = pod(labels={"app": "web"}, topologySpreadConstraints=[spread()])
    assert feasible(ref, p) == ["z2-0", "z2-1"]
    result = ref.schedule(p)
    assert result.node in {"z2-0", "z2-1"}
    # a pod outside its own selector does not count itself
    other = pod(labels={"app": "db"}, topologySpreadConstraints=[spread()])
    assert feasible(ref, other) == ["z1-0", "z1-1", "z2-0", "z2-1"]


def test_nodes_without_the_topology_key_fail_as_unresolvable():
    nodes = [*zones(1, 1), node("nozone")]
    ref = ReferenceScheduler(nodes)
    p = pod(labels={"app": "web"}, topologySpreadConstraints=[spread()])
    assert ref.filter(p)["nozone"] == [pod_topology_spread.ERR_REASON_SPREAD_MISSING_LABEL]
    assert ref.evaluate(p).statuses["nozone"].code is framework.Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_min_domains_makes_the_minimum_zero_while_domains_are_missing():
    ref = ReferenceScheduler(zones(2, 1), [web("a", "z0-0"), web("b", "z1-0")])
    p = pod(labels={"app": "web"}, topologySpreadConstraints=[spread()])
    assert feasible(ref, p) == ["z0-0", "z1-0"]
    with_min = pod(labels={"app": "web"}, topologySpreadConstraints=[spread(minDomains=3)])
    assert feasible(ref, with_min) == []
    assert ref.schedule(with_min).message == (
        "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints."
    )


def test_other_namespaces_and_terminating_pods_are_not_counted():
    leaving = web("d", "z1-0")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    ref = ReferenceScheduler(
        zones(2, 1), [web("a", "z0-0"), web("x", "z1-0", namespace="other"), leaving]
    )
    p = pod(labels={"app": "web"}, topologySpreadConstraints=[spread()])
    assert feasible(ref, p) == ["z1-0"]


def test_node_affinity_policy_honor_leaves_unselectable_domains_out():
    nodes = zones(3, 1)
    for n in nodes[:2]:
        n["metadata"]["labels"]["pool"] = "a"
    ref = ReferenceScheduler(nodes, [web("a", "z0-0"), web("b", "z1-0")])
    honor = pod(
        labels={"app": "web"}, nodeSelector={"pool": "a"}, topologySpreadConstraints=[spread()]
    )
    assert feasible(ref, honor) == ["z0-0", "z1-0"]
    ignore = pod(
        labels={"app": "web"},
        nodeSelector={"pool": "a"},
        topologySpreadConstraints=[spread(nodeAffinityPolicy="Ignore")],
    )
    # the empty z2 now counts as a domain, so z0 and z1 are one pod too many
    assert feasible(ref, ignore) == []


def test_node_taints_policy_honor_leaves_tainted_domains_out():
    nodes = zones(3, 1)
    nodes[2]["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    ref = ReferenceScheduler(nodes, [web("a", "z0-0"), web("b", "z1-0")])
    ignore = pod(labels={"app": "web"}, topologySpreadConstraints=[spread()])
    assert feasible(ref, ignore) == []
    honor = pod(labels={"app": "web"}, topologySpreadConstraints=[spread(nodeTaintsPolicy="Honor")])
    assert feasible(ref, honor) == ["z0-0", "z1-0"]


def test_match_label_keys_narrow_the_selector_to_the_pods_own_values():
    placed = [web("a", "z0-0", version="v1"), web("b", "z0-0", version="v1")]
    ref = ReferenceScheduler(zones(2, 1), placed)
    plain = pod(labels={"app": "web", "version": "v2"}, topologySpreadConstraints=[spread()])
    assert feasible(ref, plain) == ["z1-0"]
    keyed = pod(
        labels={"app": "web", "version": "v2"},
        topologySpreadConstraints=[spread(matchLabelKeys=["version"])],
    )
    assert feasible(ref, keyed) == ["z0-0", "z1-0"]


def test_the_first_failing_constraint_gives_the_reason():
    nodes = [*zones(2, 1), node("nozone")]
    nodes[0]["metadata"]["labels"]["rack"] = "r0"
    nodes[1]["metadata"]["labels"]["rack"] = "r1"
    ref = ReferenceScheduler(nodes, [web("a", "z0-0"), web("b", "z0-0")])
    p = pod(labels={"app": "web"}, topologySpreadConstraints=[spread(), spread(key="rack")])
    assert ref.filter(p) == {
        "z0-0": [pod_topology_spread.ERR_REASON_SPREAD_CONSTRAINTS],
        "z1-0": [],
        "nozone": [pod_topology_spread.ERR_REASON_SPREAD_MISSING_LABEL],
    }


def test_only_nodes_with_every_constraints_key_form_domains():
    # z1-0 has no rack label, so it is no zone domain either: z0 is the only domain
    nodes = zones(2, 1)
    nodes[0]["metadata"]["labels"]["rack"] = "r0"
    ref = ReferenceScheduler(nodes, [web("a", "z0-0"), web("b", "z0-0")])
    p = pod(labels={"app": "web"}, topologySpreadConstraints=[spread(), spread(key="rack")])
    assert ref.filter(p) == {
        "z0-0": [],
        "z1-0": [pod_topology_spread.ERR_REASON_SPREAD_MISSING_LABEL],
    }


def spread_scores(ref, p):
    return {n: s["PodTopologySpread"] for n, s in ref.scores(p).items()}


def test_soft_constraints_score_emptier_zones_higher():
    ref = ReferenceScheduler(zones(3, 2), PLACED)
    p = pod(labels={"app": "web"}, topologySpreadConstraints=[spread(when="ScheduleAnyway")])
    # raw: z0 round(2 ln 5) = 3, z1 round(ln 5) = 2, z2 0; 100 * (3 + 0 - raw) / 3, weight 2
    assert spread_scores(ref, p) == {
        "z0-0": 0,
        "z0-1": 0,
        "z1-0": 66,
        "z1-1": 66,
        "z2-0": 200,
        "z2-1": 200,
    }


def test_soft_constraints_give_nodes_without_the_key_zero():
    ref = ReferenceScheduler([*zones(2, 1), node("nozone")], [web("a", "z0-0")])
    p = pod(labels={"app": "web"}, topologySpreadConstraints=[spread(when="ScheduleAnyway")])
    # raw: z0 round(1 * ln 4) = 1, z1 0 -> 0 and 100; the node without a zone 0
    assert spread_scores(ref, p) == {"z0-0": 0, "z1-0": 200, "nozone": 0}


def test_system_default_constraints_use_the_owning_replicaset_selector():
    placed = [web("a", "z0-0"), web("b", "z0-0"), web("c", "z1-0")]
    replicaset = {
        "kind": "ReplicaSet",
        "metadata": {"name": "web-rs", "namespace": "default"},
        "spec": {"selector": WEB},
    }
    p = pod(labels={"app": "web"})
    p["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs", "controller": True}
    ]
    ref = ReferenceScheduler(zones(3, 2), placed, workloads=[replicaset])
    # hosts (maxSkew 3, weight ln 8) and zones (maxSkew 5, weight ln 5), see the module docs:
    # raw 13, 9, 10, 8, 6, 6 -> 100 * (13 + 6 - raw) / 13, times 2
    assert spread_scores(ref, p) == {
        "z0-0": 92,
        "z0-1": 152,
        "z1-0": 138,
        "z1-1": 168,
        "z2-0": 200,
        "z2-1": 200,
    }
    # without its owner known there is no default constraint
    assert set(spread_scores(ReferenceScheduler(zones(3, 2), placed), p).values()) == {0}


def test_list_defaulting_applies_the_profiles_constraints_and_can_be_hard():
    profile = Profile(
        spread=PodTopologySpreadArgs(
            default_constraints=(DefaultConstraint(1, ZONE, "DoNotSchedule"),),
            defaulting_type="List",
        )
    )
    service = {
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    ref = ReferenceScheduler(zones(3, 1), PLACED[:2], profile=profile, workloads=[service])
    assert feasible(ref, pod(labels={"app": "web"})) == ["z1-0", "z2-0"]
    # a pod with its own constraints does not get the defaults
    own = pod(labels={"app": "web"}, topologySpreadConstraints=[spread(max_skew=5)])
    assert feasible(ref, own) == ["z0-0", "z1-0", "z2-0"]
