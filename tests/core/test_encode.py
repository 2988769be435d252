"""Encoding: pods share classes by signature; static tables are computed once per sub-signature."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesalvo.core import encode
from kubesalvo.core.encode import R_NODE_AFFINITY, R_TAINT, R_UNSCHEDULABLE, Encoder, tolerates
from kubesalvo.core.plugins import registry
from kubesalvo.core.profile import Profile
from kubesalvo.core.quantity import parse_quantity
from kubesalvo.core.resources import pod_nonzero_requests, pod_requests
from kubesalvo.core.state import ClusterState
from kubesalvo.core.synthetic.workloads import make_pods


def node(name, labels=None, taints=None, unschedulable=False):
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(name, app="web", cpu="100m", **spec):
    container = {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": cpu}}}
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": app}},
        "spec": {"containers": [container], **spec},
    }


def encoder(*nodes):
    state = ClusterState()
    for n in nodes:
        state.add_node(n)
    return Encoder(state, Profile.default())


def test_replicas_share_a_class_and_differences_split_it():
    enc = encoder(node("a"))
    ids = enc.classify([pod("p1"), pod("p2"), pod("p3", cpu="200m"), pod("p4", app="db")])
    assert ids.tolist() == [0, 0, 1, 2]
    assert enc.classes[0].pods == 2
    assert enc.classes[1].requests["cpu"] == 200


def test_classes_with_the_same_constraints_share_static_rows():
    enc = encoder(node("a"), node("b"))
    ids = enc.classify([pod("p1", cpu="1"), pod("p2", cpu="2")])
    tables = enc.tables(ids.tolist())
    assert tables.c_static.tolist() == [0, 0]
    assert tables.static_reason.shape == (1, 2)


def test_tolerations_of_keys_no_node_has_do_not_split_static_rows():
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    soft = {"key": "spot", "value": "", "effect": "PreferNoSchedule"}
    enc = encoder(node("plain"), node("gpu", taints=[taint]), node("spot", taints=[soft]))

    def toleration(key, effect="NoSchedule"):
        return {"key": key, "operator": "Exists", "effect": effect}

    pods = [
        pod("p1", app="a", tolerations=[toleration("team-1")]),
        pod("p2", app="b", tolerations=[toleration("team-2"), toleration("team-3", "")]),
        pod("p3", app="c", tolerations=[toleration("team-4"), toleration("dedicated")]),
        pod("p4", app="d", tolerations=[toleration("", "")]),  # empty key: every taint
        pod("p5", app="e", tolerations=[toleration("spot", "PreferNoSchedule")]),
    ]
    tables = enc.tables(enc.classify(pods).tolist())
    assert tables.c_static.tolist() == [0, 0, 1, 2, 0]
    assert tables.static_reason[0].tolist() == [0, R_TAINT, 0]
    assert tables.static_reason[1].tolist() == [0, 0, 0]
    assert tables.static_reason[2].tolist() == [0, 0, 0]
    assert tables.c_taint.tolist() == [0, 0, 0, 1, 2]
    assert tables.taint_count[0].tolist() == [0, 0, 1]
    assert tables.taint_count[1].tolist() == [0, 0, 0]


def test_static_reasons_follow_filter_order():
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    enc = encoder(
        node("cordoned", unschedulable=True, taints=[taint]),
        node("tainted", taints=[taint]),
        node("other-zone", labels={"zone": "b"}),
        node("ok", labels={"zone": "a"}),
    )
    ids = enc.classify([pod("p", nodeSelector={"zone": "a"})])
    reasons = enc.tables(ids.tolist()).static_reason[0]
    assert reasons.tolist() == [R_UNSCHEDULABLE, R_TAINT, R_NODE_AFFINITY, 0]


def test_gt_lt_compare_integers_and_skip_non_numeric_values():
    enc = encoder(node("a", {"gen": "5"}), node("b", {"gen": "x"}), node("c", {"gen": "-3"}))
    term = {"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["4"]}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    ids = enc.classify([pod("p", affinity=affinity)])
    assert (enc.tables(ids.tolist()).static_reason[0] == 0).tolist() == [False, False, True]


def test_toleration_rules():
    taint = ("dedicated", "gpu", "NoSchedule")
    assert tolerates({"operator": "Exists"}, taint)  # empty key + Exists: everything
    assert tolerates({"key": "dedicated", "operator": "Exists"}, taint)
    assert tolerates({"key": "dedicated", "value": "gpu"}, taint)  # operator defaults to Equal
    assert not tolerates({"key": "dedicated", "value": "cpu"}, taint)
    assert not tolerates({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, taint)


def test_prefer_no_schedule_counts_only_untolerated_soft_taints():
    soft = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
    enc = encoder(node("spot", taints=[soft]), node("plain"))
    ids = enc.classify([pod("p"), pod("q", tolerations=[{"key": "spot", "operator": "Exists"}])])
    tables = enc.tables(ids.tolist())
    counts = tables.taint_count[tables.c_taint]
    assert np.array_equal(counts, [[1, 0], [0, 0]])


@given(
    number=st.integers(0, 10**9),
    suffix=st.sampled_from(["", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"]),
    name=st.sampled_from(["cpu", "memory", "example.com/gpu"]),
)
def test_fast_quantity_path_agrees_with_the_full_parser(number, suffix, name):
    text = f"{number}{suffix}"
    encode._UNITS.get(name, {}).pop(text, None)
    exact = parse_quantity(text) * (1000 if name == "cpu" else 1)
    expected = int(exact) if exact.denominator == 1 else None
    assert encode._units(name, text) == expected


_QUANTITIES = {
    "cpu": st.sampled_from(["100m", "1", "250m", "2", "1500m"]),
    "memory": st.sampled_from(["64Mi", "1Gi", "512M", "1000"]),
    "ephemeral-storage": st.sampled_from(["1Gi", "10G"]),
    "example.com/gpu": st.sampled_from(["1", "2"]),
    "requests.example.com/quota": st.sampled_from(["1"]),  # a quota name: not tracked
}


@given(
    st.lists(
        st.dictionaries(st.sampled_from(sorted(_QUANTITIES)), st.just("")).flatmap(
            lambda names: st.fixed_dictionaries({n: _QUANTITIES[n] for n in names})
        ),
        min_size=1,
        max_size=3,
    )
)
def test_fast_requests_agree_with_the_full_rules(requests):
    containers = [{"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(requests)]
    pod = {"metadata": {"name": "p"}, "spec": {"containers": containers}}
    fast = encode._simple_requests(pod["spec"])
    assert fast is not None
    assert fast[0] == pod_requests(pod)
    assert fast[1] == encode._score_requests(pod) == pod_nonzero_requests(pod)


def test_fast_requests_leave_fractions_and_init_containers_to_the_full_rules():
    container = {"name": "c", "resources": {"requests": {"cpu": "0.5m"}}}
    assert encode._simple_requests({"containers": [container]}) is None
    assert encode._simple_requests({"initContainers": [container], "containers": []}) is None


def test_host_ports_count_for_containers_and_sidecars_only():
    enc = encoder(node("a"))

    def port(number):
        return {"containerPort": 80, "hostPort": number}

    sidecar = {"name": "s", "image": "proxy:1", "restartPolicy": "Always", "ports": [port(81)]}
    init = {"name": "i", "image": "init:1", "ports": [port(82)]}
    with_ports = pod("p1")
    with_ports["spec"]["initContainers"] = [sidecar, init]
    with_ports["spec"]["containers"][0]["ports"] = [port(80), {"containerPort": 90}]
    enc.classify([with_ports, pod("p2")])
    assert [p.port for p in enc.classes[0].ports] == [81, 80]
    assert enc.classes[1].ports == []


INVALID_SELECTOR = {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}


def odd_pods():
    """Pods that take every branch of a class's completion."""
    spread = {"maxSkew": 1, "topologyKey": "zone", "labelSelector": INVALID_SELECTOR}
    anti = {"labelSelector": INVALID_SELECTOR, "topologyKey": "zone"}
    names_only = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": []}]},
        ]
    }
    sidecar = {"name": "s", "image": "proxy:1", "restartPolicy": "Always"}
    sidecar["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    return [
        pod("huge", cpu="1e400"),
        pod("hard", topologySpreadConstraints=[{**spread, "whenUnsatisfiable": "DoNotSchedule"}]),
        pod("soft", topologySpreadConstraints=[{**spread, "whenUnsatisfiable": "ScheduleAnyway"}]),
        pod(
            "anti",
            affinity={
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti]}
            },
        ),
        pod(
            "names",
            affinity={
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": names_only}
            },
        ),
        pod(
            "tolerant", tolerations=[{"key": "spot", "operator": "Exists"}, {"operator": "Exists"}]
        ),
        pod("sidecar", initContainers=[sidecar]),
        pod(
            "huge-anti",
            cpu="1e400",
            affinity={
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti]}
            },
        ),
    ]


@pytest.mark.parametrize("extension", [False, True])
@pytest.mark.parametrize("shape", ["mixed", "distinct", "gangs"])
def test_classes_completed_later_equal_classes_completed_at_once(shape, extension):
    """classify(complete=False), then complete (as core/place.py does chunk by chunk),
    gives each class exactly what classify gives at once."""
    pods = [*make_pods(150, seed=2, shape=shape), *odd_pods()]
    filters = (*registry.DEFAULT_FILTER_ORDER, "NodePool") if extension else None
    profile = Profile(filters=filters) if filters else Profile.default()
    nodes = [node("a", taints=[{"key": "spot", "effect": "NoSchedule"}]), node("b")]
    at_once, later = (Encoder(encoder(*nodes).state, profile) for _ in range(2))
    ids = at_once.classify(pods)
    assert later.classify(pods, complete=False).tolist() == ids.tolist()
    assert not any(info.complete for info in later.classes)
    half = len(later.classes) // 2
    later.complete(range(half, len(later.classes)))
    later.complete(range(half))
    assert later.classes == at_once.classes
    for done_later, done_at_once in zip(later.classes, at_once.classes, strict=True):
        if done_at_once.narrowed is None:
            assert done_later.narrowed is None
        else:
            assert done_later.narrowed.tolist() == done_at_once.narrowed.tolist()
    assert any(info.narrowed is not None for info in at_once.classes)
    assert any(info.error for info in at_once.classes)
    assert any(info.score_error for info in at_once.classes)
    assert any(info.prefilter_message for info in at_once.classes)


def test_classes_with_the_same_images_share_the_fixed_row_of_image_locality():
    # ImageLocality is a NONE channel: the fixed row is keyed by its key (the images and
    # the container count), so distinct pods of one image share it.
    held = node("a")
    held["status"]["images"] = [{"names": ["app:1"], "sizeBytes": 500 * 1024 * 1024}]
    enc = encoder(held, node("b"))
    other = pod("p4")
    other["spec"]["containers"][0]["image"] = "other:1"
    ids = enc.classify([pod("p1", cpu="1"), pod("p2", app="db"), pod("p3", cpu="2"), other])
    tables = enc.tables(ids.tolist())
    assert tables.c_fixed.tolist() == [0, 0, 0, 1]
    # 500 MiB on one node of two: 250 MiB, (250 - 23) / (1000 - 23) of the way, weight 1.
    assert tables.fixed.tolist() == [[23, 0], [0, 0]]


def test_encoders_of_one_profile_share_its_plan_but_not_their_lane_keys():
    """What an encoder takes from its profile is built once per profile (a small burst's
    encoder no longer rebuilds it); the lane keys' cache of the key of classes lacking a
    field is per encoder, as two states may be at the same version: a pod without
    tolerations still sees the PreferNoSchedule taint of the second state after the first,
    untainted one, was encoded under the same profile at the same version."""
    profile = Profile.default()
    taint = {"key": "k", "value": "v", "effect": "PreferNoSchedule"}
    plain, tainted = ClusterState(), ClusterState()
    for state, taints in ((plain, None), (tainted, [taint])):
        state.add_node(node("a", taints=taints))
        state.add_node(node("b"))
    assert plain.version == tainted.version
    first = Encoder(plain, profile)
    second = Encoder(tainted, Profile.default())  # an equal profile: the same plan
    assert first.extensions is second.extensions and first.lanes is second.lanes
    assert first._rev_key is not second._rev_key
    counts = []
    for enc in (first, second):
        (cid,) = set(enc.classify([pod("p")]).tolist())
        tables = enc.tables([cid])
        counts.append(tables.taint_count[tables.c_taint[0]].tolist())
    assert counts == [[0, 0], [1, 0]]
