"""InterPodAffinity: required affinity and anti-affinity (both sides), namespaces, score."""

from kubesalvo.core.plugins import inter_pod_affinity
from kubesalvo.core.plugins.inter_pod_affinity import InterPodAffinityArgs
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler

from .builders import node, pod, zones

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def term(app, key=ZONE, **extra):
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def affinity(kind, *terms, preferred=()):
    section = {}
    if terms:
        section["requiredDuringSchedulingIgnoredDuringExecution"] = list(terms)
    if preferred:
        section["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "podAffinityTerm": t} for w, t in preferred
        ]
    return {kind: section}


def app_pod(name, app, node_name=None, namespace="default", **spec):
    return pod(name, namespace, {"app": app}, node_name=node_name, **spec)


def feasible(ref, p):
    return sorted(n for n, reasons in ref.filter(p).items() if not reasons)


NODES = zones(3, 1)  # z0-0, z1-0, z2-0
DB = app_pod("db", "db", "z1-0")


def test_required_affinity_needs_a_matching_pod_in_the_domain():
    ref = ReferenceScheduler(NODES, [DB])
    p = app_pod("web", "web", affinity=affinity("podAffinity", term("db")))
    assert ref.filter(p) == {
        "z0-0": [inter_pod_affinity.ERR_REASON_AFFINITY],
        "z1-0": [],
        "z2-0": [inter_pod_affinity.ERR_REASON_AFFINITY],
    }


def test_the_first_pod_of_a_self_affine_group_may_go_anywhere_with_the_key():
    nodes = [*NODES, node("nozone")]
    ref = ReferenceScheduler(nodes, [DB])
    first = app_pod("web", "web", affinity=affinity("podAffinity", term("web")))
    assert feasible(ref, first) == ["z0-0", "z1-0", "z2-0"]
    # once one exists, the rest must follow it
    ref.assume(app_pod("web-0", "web"), "z2-0")
    assert feasible(ref, first) == ["z2-0"]
    # a pod that does not match its own term has no such exception
    lonely = app_pod("web", "web", affinity=affinity("podAffinity", term("cache")))
    assert feasible(ReferenceScheduler(nodes, [DB]), lonely) == []


def test_required_anti_affinity_keeps_away_from_matching_pods():
    ref = ReferenceScheduler(NODES, [DB])
    p = app_pod("web", "web", affinity=affinity("podAntiAffinity", term("db")))
    assert ref.filter(p)["z1-0"] == [inter_pod_affinity.ERR_REASON_ANTI_AFFINITY]
    assert feasible(ref, p) == ["z0-0", "z2-0"]


def test_existing_pods_anti_affinity_keeps_matching_pods_away():
    guard = app_pod(
        "guard", "guard", "z0-0", affinity=affinity("podAntiAffinity", term("web", HOST))
    )
    ref = ReferenceScheduler(NODES, [guard])
    assert ref.filter(app_pod("web", "web"))["z0-0"] == [
        inter_pod_affinity.ERR_REASON_EXISTING_ANTI_AFFINITY
    ]
    assert feasible(ref, app_pod("api", "api")) == ["z0-0", "z1-0", "z2-0"]


def test_affinity_is_checked_before_anti_affinity():
    ref = ReferenceScheduler(NODES, [DB])
    p = app_pod(
        "web",
        "web",
        affinity={
            **affinity("podAffinity", term("cache")),
            **affinity("podAntiAffinity", term("db")),
        },
    )
    assert ref.filter(p)["z1-0"] == [inter_pod_affinity.ERR_REASON_AFFINITY]


def test_terms_look_in_the_pods_namespace_unless_told_otherwise():
    other_db = app_pod("db", "db", "z1-0", namespace="other")
    namespaces = [
        {"metadata": {"name": "default", "labels": {}}},
        {"metadata": {"name": "other", "labels": {"team": "data"}}},
    ]
    ref = ReferenceScheduler(NODES, [other_db], namespaces)
    own_namespace = app_pod("web", "web", affinity=affinity("podAffinity", term("db")))
    assert feasible(ref, own_namespace) == []
    listed = app_pod(
        "web", "web", affinity=affinity("podAffinity", term("db", namespaces=["other"]))
    )
    assert feasible(ref, listed) == ["z1-0"]
    selected = app_pod(
        "web",
        "web",
        affinity=affinity(
            "podAffinity", term("db", namespaceSelector={"matchLabels": {"team": "data"}})
        ),
    )
    assert feasible(ref, selected) == ["z1-0"]
    everywhere = app_pod(
        "web", "web", affinity=affinity("podAffinity", term("db", namespaceSelector={}))
    )
    assert feasible(ref, everywhere) == ["z1-0"]


def test_existing_anti_affinity_selects_namespaces_by_the_incoming_pods_namespace_labels():
    guard = app_pod(
        "guard",
        "guard",
        "z0-0",
        namespace="infra",
        affinity=affinity(
            "podAntiAffinity", term("web", namespaceSelector={"matchLabels": {"env": "prod"}})
        ),
    )
    namespaces = [
        {"metadata": {"name": "prod", "labels": {"env": "prod"}}},
        {"metadata": {"name": "dev", "labels": {"env": "dev"}}},
    ]
    ref = ReferenceScheduler(NODES, [guard], namespaces)
    assert ref.filter(app_pod("web", "web", namespace="prod"))["z0-0"] == [
        inter_pod_affinity.ERR_REASON_EXISTING_ANTI_AFFINITY
    ]
    assert ref.filter(app_pod("web", "web", namespace="dev"))["z0-0"] == []


def ipa_scores(ref, p):
    return {n: s["InterPodAffinity"] for n, s in ref.scores(p).items()}


def test_preferred_affinity_and_anti_affinity_scores_are_min_max_normalised():
    ref = ReferenceScheduler(NODES, [DB])
    likes = app_pod("web", "web", affinity=affinity("podAffinity", preferred=[(10, term("db"))]))
    assert ipa_scores(ref, likes) == {"z0-0": 0, "z1-0": 200, "z2-0": 0}
    dislikes = app_pod(
        "web", "web", affinity=affinity("podAntiAffinity", preferred=[(10, term("db"))])
    )
    assert ipa_scores(ref, dislikes) == {"z0-0": 200, "z1-0": 0, "z2-0": 200}


def test_existing_pods_preferred_and_required_terms_score_the_incoming_pod():
    fan = app_pod(
        "fan", "fan", "z0-0", affinity=affinity("podAffinity", preferred=[(10, term("web"))])
    )
    needy = app_pod("needy", "needy", "z2-0", affinity=affinity("podAffinity", term("web")))
    ref = ReferenceScheduler(NODES, [fan, needy])
    # raw: z0 10, z1 0, z2 1 (hardPodAffinityWeight) -> 100, 0, 10; times 2
    assert ipa_scores(ref, app_pod("web", "web")) == {"z0-0": 200, "z1-0": 0, "z2-0": 20}
    no_hard = ReferenceScheduler(
        NODES,
        [fan, needy],
        profile=Profile(inter_pod_affinity=InterPodAffinityArgs(hard_pod_affinity_weight=0)),
    )
    assert ipa_scores(no_hard, app_pod("web", "web")) == {"z0-0": 200, "z1-0": 0, "z2-0": 0}
    ignoring = ReferenceScheduler(
        NODES,
        [fan, needy],
        profile=Profile(
            inter_pod_affinity=InterPodAffinityArgs(ignore_preferred_terms_of_existing_pods=True)
        ),
    )
    assert set(ipa_scores(ignoring, app_pod("web", "web")).values()) == {0}


def test_an_assumed_pod_changes_the_next_pods_affinity():
    ref = ReferenceScheduler(NODES)
    spread_out = app_pod("w", "w", affinity=affinity("podAntiAffinity", term("w")))
    results = ref.place_burst([spread_out, spread_out, spread_out, spread_out])
    assert sorted(r.node for r in results[:3]) == ["z0-0", "z1-0", "z2-0"]
    assert results[3].node is None
    assert (
        results[3].message
        == "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
    )
