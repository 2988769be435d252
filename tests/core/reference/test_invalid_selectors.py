"""Invalid label selectors, as kube-scheduler v1.34 treats them in each plugin.

Error texts are apimachinery's (checked in tests/core/test_label_selectors.py) wrapped
as PodTopologySpread, InterPodAffinity and the framework wrap them.
"""

from dataclasses import replace

from kubesalvo.core.plugins import names
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler
from tests.core.reference.builders import node, pod, zones

EMPTY_IN = "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
INVALID = {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}
WEB = {"matchLabels": {"app": "web"}}


def spread(when, selector=INVALID, key="topology.kubernetes.io/zone"):
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": selector}


def term(selector=WEB, key="kubernetes.io/hostname", **extra):
    return {"labelSelector": selector, "topologyKey": key, **extra}


def test_an_invalid_hard_spread_selector_fails_the_attempt_with_an_error():
    ref = ReferenceScheduler(zones(2, 1))
    result = ref.schedule(pod(topologySpreadConstraints=[spread("DoNotSchedule")]))
    assert result.node is None and result.error
    assert result.message == (
        'running PreFilter plugin "PodTopologySpread": get constraints from pod: obtaining '
        f"pod's hard topology spread constraints: {EMPTY_IN}"
    )


def test_an_invalid_soft_spread_selector_fails_in_prescore_unless_one_node_is_feasible():
    p = pod(topologySpreadConstraints=[spread("ScheduleAnyway")])
    result = ReferenceScheduler(zones(2, 1)).schedule(p)
    assert result.node is None and result.error
    assert result.message == (
        'running PreScore plugin "PodTopologySpread": calculating preScoreState: obtaining '
        f"pod's soft topology spread constraints: {EMPTY_IN}"
    )
    # Upstream does not score a lone feasible node, so PreScore never runs.
    alone = ReferenceScheduler(zones(1, 1)).schedule(p)
    assert alone.node == "z0-0" and alone.score is None and not alone.error


def test_a_bad_key_in_a_spread_selector_is_invalid_too():
    selector = {"matchLabels": {"bad key": "x"}}
    result = ReferenceScheduler(zones(2, 1)).schedule(
        pod(topologySpreadConstraints=[spread("DoNotSchedule", selector)])
    )
    assert result.error and 'key: Invalid value: "bad key": name part must' in result.message


def test_an_invalid_incoming_term_is_a_prefilter_rejection():
    ref = ReferenceScheduler(zones(2, 1))
    anti = {"requiredDuringSchedulingIgnoredDuringExecution": [term(), term(INVALID)]}
    result = ref.schedule(pod(affinity={"podAntiAffinity": anti}))
    assert result.node is None and not result.error
    assert result.message == (
        f"0/2 nodes are available: parsing pod: requiredAntiAffinityTerms: {EMPTY_IN}."
    )
    assert result.reason_counts == {f"parsing pod: requiredAntiAffinityTerms: {EMPTY_IN}": 2}


def test_an_invalid_namespace_selector_of_a_preferred_term_rejects_the_pod_too():
    bad_ns = term(
        namespaceSelector={
            "matchExpressions": [{"key": "t", "operator": "Exists", "values": ["x"]}]
        }
    )
    affinity = {
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "podAffinityTerm": bad_ns}
            ]
        }
    }
    result = ReferenceScheduler(zones(2, 1)).schedule(pod(affinity=affinity))
    assert result.message == (
        "0/2 nodes are available: parsing pod: preferredAffinityTerms: values: Invalid value: "
        '["x"]: values set must be empty for exists and does not exist.'
    )


def test_without_the_filter_the_score_fails_the_attempt_on_an_invalid_term():
    base = Profile.default()
    profile = replace(base, filters=tuple(f for f in base.filters if f != names.INTER_POD_AFFINITY))
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(INVALID)]}}
    result = ReferenceScheduler(zones(2, 1), profile=profile).schedule(pod(affinity=affinity))
    assert result.error
    assert result.message == (
        'running PreScore plugin "InterPodAffinity": failed to parse pod: '
        f"requiredAffinityTerms: {EMPTY_IN}"
    )


def test_a_placed_pods_section_with_an_invalid_term_is_dropped_whole():
    # Its required anti-affinity (one valid term, one invalid) no longer repels web pods;
    # its preferred affinity section, valid, still draws them.
    placed = pod(
        "placed",
        labels={"app": "db"},
        node_name="z0-0",
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [term(), term(INVALID)]
            },
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": term()}
                ]
            },
        },
    )
    ref = ReferenceScheduler([node("z0-0"), node("z0-1")], [placed])
    web = pod("web", labels={"app": "web"})
    assert ref.filter(web) == {"z0-0": [], "z0-1": []}
    scores = ref.scores(web)
    assert scores["z0-0"]["InterPodAffinity"] > scores["z0-1"]["InterPodAffinity"]


def test_an_invalid_replicaset_selector_leaves_only_the_services_one():
    placed = [pod(f"w{i}", labels={"app": "web"}, node_name="z0-0") for i in range(2)]
    service = {
        "kind": "Service",
        "metadata": {"name": "svc", "namespace": "default"},
        "spec": {"selector": {"app": "web"}},
    }
    replicaset = {
        "kind": "ReplicaSet",
        "metadata": {"name": "rs", "namespace": "default"},
        "spec": {"selector": INVALID},
    }
    p = pod(labels={"app": "web"})
    p["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}
    ]
    with_rs = ReferenceScheduler(zones(2, 1), placed, workloads=[service, replicaset])
    service_only = ReferenceScheduler(zones(2, 1), placed, workloads=[service])
    assert with_rs.scores(p) == service_only.scores(p)
    spread_scores = {n: s["PodTopologySpread"] for n, s in with_rs.scores(p).items()}
    assert spread_scores["z0-0"] < spread_scores["z1-0"]  # the Service's pods are counted
