"""The kernel against the plain-Python reference on random clusters and bursts.

Hypothesis draws small clusters (labels, numeric and non-numeric values, taints of every
effect, images, an extended resource, pods already bound) and bursts (requests, node
selectors, required and preferred node affinity, tolerations, host ports, topology spread
constraints, pod affinity and anti-affinity, gangs); pods already bound may carry pod
affinity terms too. The reference replays the kernel's choices in order; every choice
must be among the reference's best nodes with the same total score, and every pod the
kernel leaves out must fail in the reference with the same reasons and message.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core import place
from kubesalvo.core.place import plan
from kubesalvo.core.plugins import names, registry
from kubesalvo.core.plugins.framework import ResourceSpec
from kubesalvo.core.plugins.node_resources_fit import (
    NodeResourcesFitArgs,
    ScoringStrategy,
    ScoringStrategyType,
    ShapePoint,
)
from kubesalvo.core.plugins.pod_topology_spread import DefaultConstraint, PodTopologySpreadArgs
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.spread import SpreadEncoder
from kubesalvo.core.state import ClusterState
from kubesalvo.core.synthetic import FleetSpec, Scenario, WorkloadSpec
from kubesalvo.core.synthetic.nodes import make_nodes
from kubesalvo.core.synthetic.workloads import make_pods
from tests.helpers.reference import (
    assert_plan_matches_reference,
    assert_same_outcomes,
    kernel_choices,
    state_of,
)

ZONES = ("a", "b", "c")
APPS = ("web", "db", "cache")
GPU = "example.com/gpu"
TAINTS = (
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "infra", "effect": "NoExecute"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "flaky", "value": "", "effect": "PreferNoSchedule"},
)
IMAGES = ("registry/app:1", "registry/db:2", "registry/big:3")


@st.composite
def nodes(draw):
    count = draw(st.integers(1, 7))
    out = []
    for i in range(count):
        labels = {"kubernetes.io/hostname": f"n{i}"}
        if draw(st.booleans()) or i == 0:
            labels["topology.kubernetes.io/zone"] = draw(st.sampled_from(ZONES))
        if draw(st.booleans()):
            labels["disk"] = draw(st.sampled_from(("ssd", "hdd")))
        if draw(st.booleans()):
            labels["gen"] = draw(st.sampled_from(("3", "5", "7", "x")))
        allocatable = {
            "cpu": str(draw(st.integers(1, 8))),
            "memory": f"{draw(st.integers(1, 16))}Gi",
            "pods": str(draw(st.integers(1, 12))),
        }
        if draw(st.integers(0, 3)) == 0:
            allocatable[GPU] = str(draw(st.integers(0, 4)))
        images = [
            {"names": [name], "sizeBytes": draw(st.integers(1, 1500)) * 1024 * 1024}
            for name in draw(st.lists(st.sampled_from(IMAGES), unique=True, max_size=2))
        ]
        out.append(
            {
                "metadata": {"name": f"n{i}", "labels": labels},
                "spec": {
                    "taints": draw(st.lists(st.sampled_from(TAINTS), unique_by=str, max_size=2)),
                    "unschedulable": draw(st.integers(0, 7)) == 0,
                },
                "status": {"allocatable": allocatable, "images": images},
            }
        )
    return out


WORKLOADS = (
    {
        "kind": "Service",
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {"selector": {"app": "web"}},
    },
    {
        "kind": "ReplicaSet",
        "apiVersion": "apps/v1",
        "metadata": {"name": "rs-db", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}},
    },
)
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-db", "controller": True}

NAMESPACES = (
    {"metadata": {"name": "ns", "labels": {"team": "a"}}},
    {"metadata": {"name": "other", "labels": {"team": "b"}}},
)


# A selector apimachinery refuses (older objects carry such): one draw in ten.
INVALID_SELECTOR = {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}


def pod_affinity_term(draw):
    term = {
        "topologyKey": draw(
            st.sampled_from(("topology.kubernetes.io/zone", "kubernetes.io/hostname"))
        ),
        "labelSelector": INVALID_SELECTOR
        if draw(st.integers(0, 9)) == 0
        else draw(
            st.sampled_from(
                (
                    {"matchLabels": {"app": "web"}},
                    {"matchLabels": {"app": "db"}},
                    {
                        "matchExpressions": [
                            {"key": "app", "operator": "In", "values": ["web", "cache"]}
                        ]
                    },
                    {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
                    {},
                )
            )
        ),
    }
    choice = draw(st.integers(0, 4))
    if choice == 1:
        term["namespaces"] = ["other"]
    elif choice == 2:
        term["namespaceSelector"] = {"matchLabels": {"team": draw(st.sampled_from(("a", "b")))}}
    elif choice == 3:
        term["namespaceSelector"] = {}
    return term


def pod_affinity(draw):
    out = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        section = {}
        if draw(st.integers(0, 3)) == 0:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = [
                pod_affinity_term(draw) for _ in range(draw(st.integers(1, 2)))
            ]
        if draw(st.integers(0, 3)) == 0:
            section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": draw(st.integers(1, 100)), "podAffinityTerm": pod_affinity_term(draw)}
                for _ in range(draw(st.integers(1, 2)))
            ]
        if section:
            out[kind] = section
    return out


def expression(draw):
    key = draw(st.sampled_from(("topology.kubernetes.io/zone", "disk", "gen", "missing")))
    op = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")))
    if op in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": op}
    if op in ("Gt", "Lt"):
        return {"key": key, "operator": op, "values": [draw(st.sampled_from(("2", "4", "6")))]}
    values = draw(
        st.lists(st.sampled_from((*ZONES, "ssd", "hdd", "3", "5")), min_size=1, max_size=2)
    )
    return {"key": key, "operator": op, "values": values}


@st.composite
def pod_spec(draw, index, labels):
    requests = {
        "cpu": f"{draw(st.integers(0, 3000))}m",
        "memory": f"{draw(st.integers(0, 4096))}Mi",
    }
    if draw(st.integers(0, 4)) == 0:
        requests[GPU] = str(draw(st.integers(1, 2)))
    container = {
        "name": "c",
        "image": draw(st.sampled_from((*IMAGES, "registry/app"))),
        "resources": {"requests": requests},
    }
    if draw(st.integers(0, 5)) == 0:
        container["ports"] = [{"containerPort": 80, "hostPort": draw(st.sampled_from((80, 443)))}]
    spec = {"containers": [container]}
    if draw(st.integers(0, 3)) == 0:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": draw(st.sampled_from(ZONES))}
    affinity = {}
    if draw(st.integers(0, 3)) == 0:
        terms = [
            {"matchExpressions": [expression(draw) for _ in range(draw(st.integers(1, 2)))]}
            for _ in range(draw(st.integers(1, 2)))
        ]
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if draw(st.integers(0, 2)) == 0:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": draw(st.integers(1, 100)),
                "preference": {"matchExpressions": [expression(draw)]},
            }
            for _ in range(draw(st.integers(1, 2)))
        ]
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    if draw(st.integers(0, 2)) == 0:
        spec.setdefault("affinity", {}).update(pod_affinity(draw))
    tolerations = []
    for _ in range(draw(st.integers(0, 2))):
        tolerations.append(
            draw(
                st.sampled_from(
                    (
                        {"key": "dedicated", "operator": "Exists"},
                        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                        {"key": "spot", "operator": "Equal", "value": "true"},
                        {"operator": "Exists"},
                        {
                            "key": "node.kubernetes.io/unschedulable",
                            "operator": "Exists",
                            "effect": "NoSchedule",
                        },
                    )
                )
            )
        )
    if tolerations:
        spec["tolerations"] = tolerations
    constraints = []
    for _ in range(draw(st.integers(0, 2))):
        constraint = {
            "maxSkew": draw(st.integers(1, 3)),
            "topologyKey": draw(
                st.sampled_from(("topology.kubernetes.io/zone", "kubernetes.io/hostname"))
            ),
            "whenUnsatisfiable": draw(st.sampled_from(("DoNotSchedule", "ScheduleAnyway"))),
            "labelSelector": INVALID_SELECTOR
            if draw(st.integers(0, 9)) == 0
            else {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
        }
        if draw(st.integers(0, 3)) == 0:
            constraint["minDomains"] = draw(st.integers(1, 4))
        if draw(st.integers(0, 3)) == 0:
            constraint["nodeTaintsPolicy"] = "Honor"
        if draw(st.integers(0, 3)) == 0:
            constraint["nodeAffinityPolicy"] = "Ignore"
        if draw(st.integers(0, 3)) == 0:
            constraint["matchLabelKeys"] = ["tier"]
        constraints.append(constraint)
    if constraints:
        spec["topologySpreadConstraints"] = constraints
    return spec


@st.composite
def pods(draw, prefix, max_size, node_names=()):
    out = []
    count = draw(st.integers(1 if not node_names else 0, max_size))
    for i in range(count):
        labels = {"app": draw(st.sampled_from(APPS))}
        if draw(st.booleans()):
            labels["tier"] = draw(st.sampled_from(("front", "back")))
        if not node_names and draw(st.integers(0, 5)) == 0:
            labels["podGroup"] = draw(st.sampled_from(("g1", "g2")))
            labels["minAvailable"] = str(draw(st.integers(1, 3)))
        spec = draw(pod_spec(i, labels))
        if node_names:
            bound_spec = {
                "containers": spec["containers"],
                "nodeName": draw(st.sampled_from(node_names)),
            }
            if "affinity" in spec:
                bound_spec["affinity"] = spec["affinity"]
            spec = bound_spec
        # A burst's replicas often share a spec: repeat the previous pod's spec sometimes.
        if out and not node_names and draw(st.integers(0, 2)) == 0:
            spec, labels = out[-1]["spec"], dict(out[-1]["metadata"]["labels"])
        meta = {
            "name": f"{prefix}{i}",
            "namespace": draw(st.sampled_from(("ns", "ns", "other"))),
            "uid": f"{prefix}{i}",
            "labels": labels,
        }
        if draw(st.integers(0, 2)) == 0:
            meta["ownerReferences"] = [OWNER]
        if node_names and draw(st.integers(0, 4)) == 0:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"  # terminating: spread skips it
        out.append({"metadata": meta, "spec": spec})
    return out


profiles = st.sampled_from(
    (
        Profile.default(),
        # InterPodAffinity scores but does not filter: its PreScore reads the pod's terms
        Profile(
            filters=tuple(f for f in registry.DEFAULT_FILTER_ORDER if f != names.INTER_POD_AFFINITY)
        ),
        Profile(
            spread=PodTopologySpreadArgs(
                default_constraints=(
                    DefaultConstraint(1, "topology.kubernetes.io/zone", "DoNotSchedule"),
                    DefaultConstraint(2, "kubernetes.io/hostname", "ScheduleAnyway"),
                ),
                defaulting_type="List",
            )
        ),
        Profile(
            fit=NodeResourcesFitArgs(
                scoring_strategy=ScoringStrategy(ScoringStrategyType.MOST_ALLOCATED)
            )
        ),
        Profile(
            fit=NodeResourcesFitArgs(
                scoring_strategy=ScoringStrategy(
                    ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO,
                    (ResourceSpec("cpu", 2), ResourceSpec("memory", 1), ResourceSpec(GPU, 3)),
                    (ShapePoint(0, 10), ShapePoint(50, 3), ShapePoint(100, 7)),
                )
            )
        ),
    )
)


@st.composite
def scenarios(draw):
    cluster = draw(nodes())
    names_ = [n["metadata"]["name"] for n in cluster]
    bound = draw(pods("bound", 6, node_names=names_))
    burst = draw(pods("p", 10))
    return cluster, bound, burst, draw(profiles)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_kernel_choices_match_the_reference(scenario):
    cluster, bound, burst, profile = scenario
    state = state_of(cluster, bound)
    for namespace in NAMESPACES:
        state.set_namespace(namespace["metadata"]["name"], namespace["metadata"]["labels"])
    result = plan(state, burst, profile, workloads=WORKLOADS)
    reference = ReferenceScheduler(cluster, bound, NAMESPACES, profile, WORKLOADS)
    expected = reference.place_burst(burst, choose=kernel_choices(result, burst))
    assert_same_outcomes(result, expected)


@pytest.mark.parametrize("small_chunks", [False, True])
@pytest.mark.parametrize("shape", ["mixed", "distinct", "replicasets", "gangs"])
def test_synthetic_bursts_match_the_reference(shape, small_chunks, monkeypatch):
    """Realistic workloads on a synthetic fleet, placed by the kernel and replayed.

    With small chunks the burst is cut into many kernel calls of 16 classes, so later
    chunks must see the earlier chunks' placements in their counts.
    """
    if small_chunks:
        monkeypatch.setattr(place, "_CHUNK_CELLS", 1)
    assert_plan_matches_reference(make_nodes(40, seed=7), make_pods(120, seed=8, shape=shape))


@pytest.mark.parametrize("small_chunks", [False, True])
def test_deployment_pods_take_the_host_and_zone_path_and_match_the_reference(
    small_chunks, monkeypatch
):
    """Pods owned by ReplicaSets, without constraints of their own, get the System default
    constraints (hostname and zone, ScheduleAnyway) over what their ReplicaSet selects:
    the kernel places them per (zone, matching pods on the node) group (c_mode 3), and
    every choice is one of the reference's best nodes with its score, with a quarter of
    each ReplicaSet already running, several classes taking the same nodes and, with small
    chunks, counts carried from chunk to chunk."""
    if small_chunks:
        monkeypatch.setattr(place, "_CHUNK_CELLS", 1)
    modes: list[int] = []
    mode_of = SpreadEncoder._mode

    def recorded(self, cid, has_interpod):
        modes.append(mode_of(self, cid, has_interpod))
        return modes[-1]

    monkeypatch.setattr(SpreadEncoder, "_mode", recorded)
    scenario = Scenario(
        name="owned",
        fleet=FleetSpec(nodes=45),
        workloads=(WorkloadSpec(shape="replicasets", pods=360, classes=6),),
        seed=5,
    )
    snapshot = scenario.generate(owners=True)
    nodes = snapshot.nodes
    running, burst = [], []
    for i, pod in enumerate(snapshot.pending_pods()):
        if i % 4 == 0:
            spec = {**pod["spec"], "nodeName": nodes[(i * 7) % len(nodes)]["metadata"]["name"]}
            running.append({**pod, "spec": spec})
        else:
            burst.append(pod)
    state = state_of(nodes, running)
    for namespace in snapshot.namespaces:
        meta = namespace["metadata"]
        state.set_namespace(meta["name"], meta.get("labels") or {})
    result = plan(state, burst, workloads=snapshot.workloads)
    assert 3 in modes and result.placed == len(burst)
    reference = ReferenceScheduler(
        nodes, running, snapshot.namespaces, workloads=snapshot.workloads
    )
    expected = reference.place_burst(burst, choose=kernel_choices(result, burst))
    assert_same_outcomes(result, expected)


def test_a_pod_with_more_than_64_soft_constraints_is_scored_on_all_of_them():
    """Spread scoring has no limit on a pod's constraints; every one weighs in."""
    zone = "topology.kubernetes.io/zone"
    fleet = [
        {
            "metadata": {
                "name": f"n{i}",
                "labels": {"kubernetes.io/hostname": f"n{i}", zone: "ab"[i % 2]},
            },
            "spec": {},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
        }
        for i in range(4)
    ]
    bound = [
        {
            "metadata": {"name": f"old{i}", "namespace": "ns", "labels": {"app": "w"}},
            "spec": {"nodeName": "n0", "containers": [{"name": "c", "image": "x"}]},
        }
        for i in range(3)
    ]
    constraints = [
        {
            "maxSkew": 1 + k % 3,
            "topologyKey": zone if k % 2 else "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "w"}},
        }
        for k in range(70)
    ]
    burst = [
        {
            "metadata": {"name": f"p{i}", "namespace": "ns", "labels": {"app": "w"}},
            "spec": {
                "containers": [{"name": "c", "image": "x"}],
                "topologySpreadConstraints": constraints,
            },
        }
        for i in range(6)
    ]
    result = plan(state_of(fleet, bound), burst)

    choose = kernel_choices(result, burst)
    expected = ReferenceScheduler(fleet, bound).place_burst(burst, choose=choose)
    assert [r.node for r in expected] == result.nodes
    assert "n0" not in result.nodes[:3]  # the spread scores keep the first pods off n0


def test_a_gang_with_a_malformed_minimum_is_not_tried_and_takes_no_room():
    """Coscheduling's PreFilter refuses every member of a group whose ``minAvailable``
    label cannot be read (the runtime does the same): no crash, no room taken, the
    reference agrees."""
    fleet = [
        {
            "metadata": {"name": "only", "labels": {"kubernetes.io/hostname": "only"}},
            "spec": {},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}},
        }
    ]

    def pod(name, cpu, labels):
        return {
            "metadata": {"name": name, "namespace": "ml", "labels": labels},
            "spec": {
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]
            },
        }

    burst = [
        pod("w0", "1", {"podGroup": "train", "minAvailable": "2"}),
        pod("w1", "1", {"podGroup": "train", "minAvailable": "two"}),
        pod("solo", "2", {}),
    ]
    assert_plan_matches_reference(fleet, burst)
    state = ClusterState()
    state.add_node(fleet[0])
    result = plan(state, burst)
    expected = (
        "0/1 nodes are available: pod group ml/train: label minAvailable='two' is not a "
        "positive integer (pod w1)."
    )
    assert result.messages[:2] == [expected, expected]
    assert result.nodes == [None, None, "only"]
    assert not result.rolled_back.any()
    assert result.rejectors[0] == frozenset((names.COSCHEDULING,))


@pytest.mark.parametrize("nodes", [4, 40])
def test_domain_counts_kept_across_a_class_follow_other_classes_and_rollbacks(nodes):
    """A class's spread and inter-pod counts per domain are kept from one of its pods to
    the next and follow the placements in between: pods of other classes that its
    selectors count (placed without reading those counts), a gang rolled back, and, with
    every node holding a matching pod, the smallest hostname count rising."""
    zone = "topology.kubernetes.io/zone"
    host = "kubernetes.io/hostname"
    fleet = [
        {
            "metadata": {"name": f"n{i}", "labels": {host: f"n{i}", zone: "abcd"[i % 4]}},
            "spec": {},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
        }
        for i in range(nodes)
    ]
    web = {"matchLabels": {"app": "web"}}
    # the inter-pod terms select only the constrained pods: the others have no term to
    # read (no inter-pod rows of their own), so the constrained class keeps its counts
    peers = {"matchLabels": {"role": "a"}}

    def pod(name, cpu, labels, **spec):
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
        return {
            "metadata": {"name": name, "namespace": "ns", "labels": labels},
            "spec": {"containers": [container], **spec},
        }

    def spread(key, how, skew=1):
        return {
            "maxSkew": skew,
            "topologyKey": key,
            "whenUnsatisfiable": how,
            "labelSelector": web,
        }

    constrained = {
        "topologySpreadConstraints": [
            spread(zone, "DoNotSchedule"),
            spread(host, "DoNotSchedule", 2),
            spread(zone, "ScheduleAnyway", 2),
        ],
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 50, "podAffinityTerm": {"labelSelector": peers, "topologyKey": host}}
                ]
            },
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 20, "podAffinityTerm": {"labelSelector": peers, "topologyKey": zone}}
                ]
            },
        },
    }
    burst = []
    for i in range(3 * nodes // 2 + 6):
        burst.append(pod(f"a{i}", "100m", {"app": "web", "role": "a"}, **constrained))
        if i % 3 == 1:
            burst.append(pod(f"b{i}", "200m", {"app": "web"}))
            burst.append(pod(f"c{i}", "300m", {"app": "web"}))
        if i % 7 == 3:  # three members fit, the fourth cannot: all are taken back
            gang = {"app": "web", "podGroup": f"g{i}", "minAvailable": "4"}
            burst += [pod(f"g{i}-{k}", "100m", gang) for k in range(3)]
            burst.append(pod(f"g{i}-3", "64", gang))
    assert_plan_matches_reference(fleet, burst)


def test_spread_and_inter_pod_classes_placed_by_group_match_the_reference(monkeypatch):
    """Classes with hard and soft spread constraints and inter-pod terms on the hostname
    and the zone, on nodes with untolerated PreferNoSchedule taints and preferred node
    affinity, some already holding matching pods: the kernel places their pods by (zone,
    taints, affinity score) group and scores only the rows holding counted pods one by
    one; every choice is the reference's, with its score, and among its equal best nodes
    (drawn among them, their count the reference's)."""
    zone = "topology.kubernetes.io/zone"
    host = "kubernetes.io/hostname"
    fleet = []
    for i in range(48):
        labels = {host: f"n{i}", zone: "abcd"[i % 4]}
        if i % 3 == 0:
            labels["tier"] = "fast"
        spec = {"taints": [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]}
        fleet.append(
            {
                "metadata": {"name": f"n{i}", "labels": labels},
                "spec": spec if i % 5 == 0 else {},
                "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
            }
        )

    def selector(app):
        return {"matchLabels": {"app": app}}

    def spread(app, key, how, skew=1):
        return {
            "maxSkew": skew,
            "topologyKey": key,
            "whenUnsatisfiable": how,
            "labelSelector": selector(app),
        }

    def term(app, key):
        return {"labelSelector": selector(app), "topologyKey": key}

    fast = {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 30,
                "preference": {
                    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fast"]}]
                },
            }
        ]
    }
    specs = {
        "web": {
            "topologySpreadConstraints": [spread("web", zone, "DoNotSchedule")],
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": term("web", host)}
                    ]
                },
                "nodeAffinity": fast,
            },
        },
        "db": {
            "topologySpreadConstraints": [
                spread("db", host, "ScheduleAnyway"),
                spread("db", zone, "ScheduleAnyway"),
            ],
            "affinity": {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 50, "podAffinityTerm": term("web", zone)}
                    ]
                }
            },
        },
        "cache": {
            "topologySpreadConstraints": [spread("cache", host, "DoNotSchedule", 2)],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [term("cache", host)]
                }
            },
        },
        "api": {
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": term("api", host)}
                    ]
                }
            }
        },
    }

    def pod(name, app, cpu, node=None):
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
        spec = {"containers": [container], **specs[app]}
        if node is not None:
            spec["nodeName"] = node
        return {
            "metadata": {"name": name, "namespace": "ns", "labels": {"app": app}},
            "spec": spec,
        }

    bound = [
        pod(f"old-{app}-{k}", app, "500m", f"n{(7 * k + j) % 48}")
        for j, app in enumerate(specs)
        for k in range(3)
    ]
    burst = [
        pod(f"{app}-{k}", app, "300m" if app != "db" else "700m")
        for app in specs
        for k in range(50 if app == "cache" else 20)  # more cache pods than nodes
    ]
    kernels = []
    kernel_class = place.BurstKernel

    def recorded(*args):
        kernels.append(kernel_class(*args))
        return kernels[-1]

    monkeypatch.setattr(place, "BurstKernel", recorded)
    result = plan(state_of(fleet, bound), burst)
    assert sum(k.grouped_pods for k in kernels) >= 60
    # Ties are drawn among the best nodes (no longer the first from a cursor): the kernel's
    # choice is checked against the reference's best nodes and their count.
    choose = kernel_choices(result, burst)
    expected = ReferenceScheduler(fleet, bound).place_burst(burst, choose=choose)
    assert_same_outcomes(result, expected)
    assert result.placed < len(burst)  # the failures' reasons are compared too
