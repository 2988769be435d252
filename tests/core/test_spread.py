"""Spread counters across chunks: what a later chunk's classes start from."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesalvo.core import spread as spread_module
from kubesalvo.core.encode import Encoder
from kubesalvo.core.profile import Profile
from kubesalvo.core.spread import SpreadEncoder
from kubesalvo.core.state import ClusterState
from kubesalvo.core.synthetic import FleetSpec, Scenario, WorkloadSpec

HOSTNAME = "kubernetes.io/hostname"


def node(name):
    return {
        "metadata": {"name": name, "labels": {HOSTNAME: name}},
        "spec": {},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(name, cpu, app="web"):
    spread = {
        "maxSkew": 1,
        "topologyKey": HOSTNAME,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": app}},
    }
    container = {"name": "c", "image": "app:1", "resources": {"requests": {"cpu": cpu}}}
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": app}},
        "spec": {"containers": [container], "topologySpreadConstraints": [spread]},
    }


def spread_encoder(*pods):
    state = ClusterState()
    for name in ("a", "b"):
        state.add_node(node(name))
    encoder = Encoder(state, Profile.default())
    encoder.classify(list(pods))
    spread = SpreadEncoder(encoder)
    spread.prepare(range(len(encoder.classes)))
    return spread


def test_a_counter_starts_from_the_pods_an_earlier_chunk_placed():
    spread = spread_encoder(pod("first", "100m"), pod("second", "200m"))
    spread.tables([0], [1])
    spread.record([0], np.array([0]), np.array([1]))  # "first" went to row 1
    tables = spread.tables([1], [1])
    counter = tables.k_counter[0]
    assert counter > 0  # live: it counts the placed pod
    assert tables.counters[counter].tolist() == [0, 1]


def test_a_counter_only_its_one_pod_reads_and_raises_stays_dead():
    spread = spread_encoder(pod("first", "100m"), pod("other", "200m", app="db"))
    spread.tables([0], [1])
    spread.record([0], np.array([0]), np.array([1]))  # "first" (app=web) on row 1
    tables = spread.tables([1], [1])  # app=db counts nothing placed so far
    assert tables.k_counter.tolist() == [0]
    assert tables.counters.shape[0] == 1 and not tables.counters.any()


def test_prepare_registers_what_every_class_constraints_would():
    """prepare leaves own constraints to the chunks (their selectors parsed once the
    classes are complete) yet registers the same topology keys, in the same order, and
    the same most constraints per class as building every class's constraints."""
    scenario = Scenario(
        name="keys",
        fleet=FleetSpec(nodes=30),
        workloads=(
            WorkloadSpec(shape="replicasets", pods=60, classes=4),
            WorkloadSpec(shape="distinct", pods=40),
            WorkloadSpec(shape="mixed", pods=200),
        ),
        seed=5,
    )
    snapshot = scenario.generate(owners=True)
    state = ClusterState()
    for n in snapshot.nodes:
        state.add_node(n)
    encoder = Encoder(state, Profile.default())
    encoder.classify(snapshot.pending_pods(), complete=False)
    classes = range(len(encoder.classes))
    prepared = SpreadEncoder(encoder, snapshot.workloads)
    prepared.prepare(classes)
    built = SpreadEncoder(encoder, snapshot.workloads)
    for cid in classes:
        built.constraints(cid)
        built.interpod.register(cid)
    assert list(prepared.keys.items()) == list(built.keys.items())
    assert len(prepared.keys) >= 2
    most = max(len(built.constraints(cid)) for cid in classes)
    assert prepared.max_constraints == most > 0
    assert not any(info.complete for info in encoder.classes)


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["add", "remove", "unnode", "node"]),
            st.integers(0, 7),
            st.integers(0, 3),
        ),
        max_size=40,
    )
)
def test_the_kept_label_index_of_pod_groups_is_the_one_built_afresh(steps):
    """The label index of the state's pod groups is kept across bursts while no group comes
    or goes (``groups_version``); after any pods added and removed (groups created, freed
    and their ids reused) and nodes leaving and coming back, it is the index built anew."""
    state = ClusterState()
    for name in ("a", "b"):
        state.add_node(node(name))
    for kind, i, app in steps:
        if kind == "add":
            placed = pod(f"p{i}", "100m", app=f"a{app}")
            placed["spec"]["nodeName"] = "a" if i % 2 else "b"
            state.add_pod(placed)  # a pod known already moves (its group may change)
        elif kind == "remove":
            state.remove_pod_key(f"ns/p{i}")
        elif kind == "unnode":
            state.remove_node("a")
        else:
            state.add_node(node("a"))
        fresh: dict = {}
        for gid, group in enumerate(state.groups):
            for pair in group.labels.items():
                fresh.setdefault(pair, set()).add(gid)
        assert spread_module._group_index(state) == fresh
