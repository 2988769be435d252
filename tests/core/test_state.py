"""ClusterState: rows, columns and counts follow node and pod changes incrementally."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesalvo.core.resources import HostPort
from kubesalvo.core.state import ClusterState, normalized_image_name


def node(name, cpu="4", memory="8Gi", pods="110", labels=None, taints=None, images=None, **extra):
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **extra}
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or []},
        "status": {
            "allocatable": allocatable,
            "images": images or [],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name, node_name=None, cpu=None, memory=None, labels=None, ports=(), **extra):
    requests = {k: v for k, v in {"cpu": cpu, "memory": memory, **extra}.items() if v}
    container = {"name": "c", "resources": {"requests": requests}}
    if ports:
        container["ports"] = [{"containerPort": p, "hostPort": p} for p in ports]
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": labels or {}},
        "spec": {"nodeName": node_name, "containers": [container]},
    }


def test_node_resources_land_in_fixed_and_extended_columns():
    state = ClusterState()
    row = state.add_node(node("a", **{"nvidia.com/gpu": "2"}))
    gpu = state.resource_index["nvidia.com/gpu"]
    assert state.allocatable[row, :4].tolist() == [4000, 8 << 30, 0, 110]
    assert state.allocatable[row, gpu] == 2
    assert state.node_count == 1


def test_pods_add_requests_and_non_zero_defaults_and_remove_exactly():
    state = ClusterState()
    row = state.add_node(node("a"))
    state.add_pod(pod("p1", "a", cpu="500m", memory="1Gi"))
    state.add_pod(pod("p2", "a"))
    assert state.requested[row, :4].tolist() == [500, 1 << 30, 0, 2]
    assert state.nonzero_requested[row].tolist() == [600, (1 << 30) + (200 << 20)]
    state.remove_pod(pod("p1"))
    assert state.requested[row, :4].tolist() == [0, 0, 0, 1]
    assert state.nonzero_requested[row].tolist() == [100, 200 << 20]


def test_pod_for_unknown_node_is_not_counted():
    state = ClusterState()
    assert not state.add_pod(pod("p", "ghost", cpu="1"))
    assert state.pods == {}


def test_removed_node_row_is_reused_and_cleared():
    state = ClusterState()
    state.add_node(node("a", labels={"zone": "z1"}))
    b = state.add_node(
        node("b", labels={"zone": "z2"}, taints=[{"key": "k", "effect": "NoSchedule"}])
    )
    state.add_pod(pod("p", "b", cpu="1"))
    state.remove_node("b")
    assert state.present[b] == 0 and state.requested[b].sum() == 0
    assert state.label_columns["zone"][b] == -1 and state.taints[b].sum() == 0
    assert state.pods == {}
    c = state.add_node(node("c"))
    assert c == b and state.names[c] == "c" and state.rows == 2


def test_rows_and_columns_grow_beyond_initial_capacity():
    state = ClusterState(capacity=2)
    for i in range(9):
        state.add_node(node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"}))
    state.add_pod(pod("p", "n8", **{"example.com/foo": "3"}))
    column = state.resource_index["example.com/foo"]
    assert state.capacity >= 9
    assert state.requested[state.row_of["n8"], column] == 3
    assert state.label_columns["kubernetes.io/hostname"][:9].tolist() == list(range(9))


def test_labels_are_value_ids_per_key_and_update_in_place():
    state = ClusterState()
    a = state.add_node(node("a", labels={"zone": "z1", "tier": "x"}))
    b = state.add_node(node("b", labels={"zone": "z2"}))
    zone = state.label_columns["zone"]
    assert zone[a] != zone[b] and state.label_columns["tier"][b] == -1
    state.update_node(node("a", labels={"zone": "z2"}))
    assert zone[a] == zone[b] and state.label_columns["tier"][a] == -1


def test_a_label_value_no_node_holds_frees_its_id_for_the_next_value():
    """Nodes coming and going under new hostnames keep the hostname ids as few as the nodes
    present at once (before, every name ever seen kept an id, and the per-domain work of
    hostname spreading grew with them)."""
    state = ClusterState()
    host = "kubernetes.io/hostname"
    state.add_node(node("keep", labels={host: "keep", "zone": "z1"}))
    for i in range(200):
        state.add_node(node(f"n{i}", labels={host: f"n{i}", "zone": "z1"}))
        if i:
            state.remove_node(f"n{i - 1}")
    assert len(state.label_values[host]) <= 3
    assert set(state.label_value_ids[host]) == {"keep", "n199"}
    assert list(state.label_value_ids["zone"]) == ["z1"]
    # Every row's id names its node's value; a freed id holds None.
    for row in state.row_of.values():
        for key, value in state.node_labels[row].items():
            assert state.label_values[key][state.label_columns[key][row]] == value
    free = [v for v in state.label_values[host] if v is None]
    assert len(free) == len(state.label_values[host]) - 2
    # A relabelled node lets go of its old value, and keeps the id of a value it keeps.
    zone_id = state.label_value_ids["zone"]["z1"]
    state.update_node(node("keep", labels={host: "renamed", "zone": "z1"}))
    assert "keep" not in state.label_value_ids[host]
    assert state.label_value_ids["zone"]["z1"] == zone_id
    state.update_node(node("keep", labels={}))
    assert set(state.label_value_ids[host]) == {"n199"}
    assert state.label_value_ids["zone"] == {"z1": zone_id}


def test_images_are_counted_per_node_and_pod_images_normalised():
    state = ClusterState()
    image = {"names": ["registry/app:1", "registry/app@sha256:abc"], "sizeBytes": 100}
    state.add_node(node("a", images=[image]))
    state.add_node(node("b", images=[image]))
    assert normalized_image_name("registry/app") == "registry/app:latest"
    assert normalized_image_name("host:5000/app") == "host:5000/app:latest"
    assert set(state.images["registry/app:1"]) == {0, 1}
    state.remove_node("a")
    assert set(state.images["registry/app:1"]) == {1}


def test_host_ports_and_groups_follow_pods():
    state = ClusterState()
    row = state.add_node(node("a"))
    state.add_pod(pod("p1", "a", labels={"app": "x"}, ports=(80,)))
    state.add_pod(pod("p2", "a", labels={"app": "x"}))
    assert sum(state.ports[row].values()) == 1
    gid = state.group_ids[("ns", (("app", "x"),))]
    assert state.group_counts([gid]).tolist() == [2]
    state.remove_pod(pod("p1"))
    assert state.ports[row] == {}
    assert state.group_counts([gid]).tolist() == [1]


def test_assumed_pod_is_counted_once_then_confirmed_or_forgotten():
    state = ClusterState()
    row = state.add_node(node("a"))
    p = pod("p", None, cpu="1")
    state.assume_pod(p, "a")
    assert state.pods["p"].assumed and state.requested[row, 0] == 1000
    state.confirm_pod(p)
    assert not state.pods["p"].assumed
    state.forget_pod(p)
    assert state.requested[row, 0] == 0


def test_finished_pod_holds_no_resources():
    state = ClusterState()
    row = state.add_node(node("a"))
    p = pod("p", "a", cpu="1")
    state.add_pod(p)
    p["status"] = {"phase": "Succeeded"}
    assert not state.add_pod(p)
    assert state.requested[row, 0] == 0 and state.pods == {}


def test_removing_one_of_two_pods_on_a_host_port_frees_the_port():
    # Upstream's HostPortInfo is a set: RemovePod deletes the entry even though another
    # pod on the node still declares the port.
    state = ClusterState()
    row = state.add_node(node("a"))
    state.add_pod(pod("p1", "a", ports=(80,)))
    state.add_pod(pod("p2", "a", ports=(80,)))
    assert list(state.ports[row].values()) == [1]
    state.remove_pod(pod("p1"))
    assert state.ports[row] == {}
    state.remove_pod(pod("p2"))
    assert state.ports[row] == {}


def test_rows_with_ports_are_the_rows_holding_a_host_port():
    # A burst reads only these rows' ports (core/place.py): every way a port comes onto a
    # row (a pod, an assumed placement, a node coming back to its ghosts) or leaves it.
    state = ClusterState()
    rows = [state.add_node(node(name)) for name in ("a", "b", "c", "d")]
    assert state.rows_with_ports() == []
    state.add_pod(pod("p1", "c", ports=(80,)))
    state.add_pod(pod("p2", "a", ports=(81,)))
    state.add_pod(pod("p3", "b"))
    assert state.rows_with_ports() == [rows[0], rows[2]]
    port = HostPort("0.0.0.0", "TCP", 443)
    state.add_placed_many(["q1", "q2"], [rows[3], rows[1]], "ns", (), {}, (0, 0), [port], None)
    assert state.rows_with_ports() == rows
    state.remove_pod(pod("p1"))
    state.remove_pod_key("q2")
    assert state.rows_with_ports() == [rows[0], rows[3]]
    state.remove_node("a")  # p2 stays as a ghost of a, with its port
    assert state.rows_with_ports() == [rows[3]]
    back = state.add_node(node("a"))
    assert state.rows_with_ports() == sorted([back, rows[3]])
    assert list(state.ports[back]) == [HostPort("0.0.0.0", "TCP", 81)]
    for row in range(state.rows):
        assert (row in state.rows_with_ports()) == bool(state.ports[row])


def image(name, size):
    return {"names": [name], "sizeBytes": size}


def test_image_size_is_the_first_reporters_while_any_node_has_it():
    state = ClusterState()
    a = state.add_node(node("a", images=[image("app:1", 100)]))
    b = state.add_node(node("b", images=[image("app:1", 300)]))
    assert state.images["app:1"] == {a: 100, b: 100}
    state.remove_node("a")
    assert state.images["app:1"] == {b: 100}
    a = state.add_node(node("a", images=[image("app:1", 500)]))
    assert state.images["app:1"] == {a: 100, b: 100}


def test_updating_the_node_that_set_an_image_size_keeps_the_size():
    state = ClusterState()
    a = state.add_node(node("a", images=[image("app:1", 100)]))
    b = state.add_node(node("b", images=[image("app:1", 300)]))
    state.update_node(node("a", images=[image("app:1", 200)]))
    assert state.images["app:1"] == {a: 100, b: 100}


def test_an_image_reported_by_no_node_is_forgotten_with_its_size():
    state = ClusterState()
    state.add_node(node("a", images=[image("app:1", 100)]))
    state.update_node(node("a", images=[image("app:1", 200)]))
    assert state.image_sizes == {"app:1": 200}
    state.remove_node("a")
    assert state.images == {} and state.image_sizes == {}
    b = state.add_node(node("b", images=[image("app:1", 300)]))
    assert state.images["app:1"] == {b: 300}


def test_a_name_listed_twice_by_one_node_takes_the_first_size():
    state = ClusterState()
    a = state.add_node(node("a", images=[image("app:1", 100), image("app:1", 400)]))
    assert state.images["app:1"] == {a: 100}


def test_pods_of_a_removed_node_stop_counting_and_come_back_with_it():
    state = ClusterState()
    state.add_node(node("a", labels={"zone": "z1"}))
    state.add_node(node("b", labels={"zone": "z2"}))
    state.add_pod(pod("p1", "a", cpu="1", labels={"app": "x"}, ports=(80,)))
    state.add_pod(pod("p2", "a", cpu="2", labels={"app": "x"}))
    gid = state.group_ids[("ns", (("app", "x"),))]
    state.remove_node("a")
    assert state.pods == {} and state.group_counts([gid]).sum() == 0
    assert set(state.ghosts["a"]) == {"p1", "p2"}
    row = state.add_node(node("a", labels={"zone": "z3"}))
    assert set(state.pods) == {"p1", "p2"} and state.ghosts == {}
    assert state.requested[row, :4].tolist() == [3000, 0, 0, 2]
    assert state.pods_on_row[row] == {"p1", "p2"}
    assert state.group_counts([gid])[row] == 2
    assert list(state.ports[row]) == [HostPort("0.0.0.0", "TCP", 80)]


def test_removing_a_pod_of_a_removed_node_forgets_it_for_good():
    state = ClusterState()
    state.add_node(node("a"))
    state.add_pod(pod("p1", "a", cpu="1"))
    state.add_pod(pod("p2", "a", cpu="2"))
    state.remove_node("a")
    state.remove_pod(pod("p1"))
    assert set(state.ghosts["a"]) == {"p2"}
    state.remove_pod(pod("p2"))
    assert state.ghosts == {}
    row = state.add_node(node("a"))
    assert state.pods == {} and state.requested[row].sum() == 0


def test_a_pod_bound_before_its_node_is_known_counts_once_the_node_arrives():
    state = ClusterState()
    assert not state.add_pod(pod("p", "late", cpu="1"))
    assert state.pods == {} and state.pod_record("p") is not None
    row = state.add_node(node("late"))
    assert state.pods["p"].row == row and state.requested[row, 0] == 1000


def test_an_assumed_pod_of_a_removed_node_can_be_forgotten():
    state = ClusterState()
    state.add_node(node("a"))
    p = pod("p", None, cpu="1")
    state.assume_pod(p, "a")
    state.remove_node("a")
    assert state.pod_record("p").assumed
    state.forget_pod(p)
    row = state.add_node(node("a"))
    assert state.pod_record("p") is None and state.requested[row, 0] == 0


def test_a_removed_nodes_port_set_follows_its_pods_until_it_comes_back():
    # Upstream's NodeInfo (and its HostPortInfo) outlives the Node: removing one of two
    # pods sharing a port while the node is gone frees the port for good.
    state = ClusterState()
    state.add_node(node("a"))
    state.add_pod(pod("p1", "a", ports=(80,)))
    state.add_pod(pod("p2", "a", ports=(80, 443)))
    state.remove_node("a")
    state.remove_pod(pod("p1"))
    row = state.add_node(node("a"))
    assert set(state.pods) == {"p2"}
    assert list(state.ports[row]) == [HostPort("0.0.0.0", "TCP", 443)]


def test_pods_bound_before_their_node_share_its_port_set():
    state = ClusterState()
    state.add_pod(pod("p1", "late", ports=(80,)))
    state.add_pod(pod("p2", "late", ports=(80,)))
    state.remove_pod(pod("p2"))
    row = state.add_node(node("late"))
    assert state.ports[row] == {} and set(state.pods) == {"p1"}


def test_updating_a_present_node_keeps_its_pods_and_ports():
    state = ClusterState()
    row = state.add_node(node("a", labels={"zone": "z1"}))
    state.add_pod(pod("p1", "a", cpu="1", ports=(80,)))
    assert state.update_node(node("a", labels={"zone": "z2"})) == row
    assert set(state.pods) == {"p1"} and state.requested[row, 0] == 1000
    assert list(state.ports[row]) == [HostPort("0.0.0.0", "TCP", 80)]


def test_add_placed_moves_a_known_pod_or_ghost_and_counts_it_once():
    state = ClusterState()
    a = state.add_node(node("a"))
    b = state.add_node(node("b"))
    state.add_pod(pod("p", "a", cpu="1", labels={"app": "x"}, ports=(80,)))
    port = HostPort("0.0.0.0", "TCP", 80)
    cpu = state.resource_index["cpu"]
    state.add_placed("p", b, "ns", (("app", "x"),), {cpu: 1000}, (1000, 0), [port], None)
    assert state.pods["p"].row == b and state.pods["p"].assumed
    assert state.requested[a, :4].tolist() == [0, 0, 0, 0]
    assert state.requested[b, :4].tolist() == [1000, 0, 0, 1]
    assert list(state.ports[a]) == [] and list(state.ports[b]) == [port]
    assert state.pods_on_row[a] == set() and state.pods_on_row[b] == {"p"}
    gid = state.group_ids[("ns", (("app", "x"),))]
    assert state.group_counts([gid]).tolist() == [0, 1]
    # a ghost of an absent node is forgotten when the kernel places it elsewhere
    state.add_pod(pod("g", "gone", cpu="1"))
    state.add_placed("g", a, "ns", (), {cpu: 1000}, (1000, 0), [], None)
    assert state.ghosts == {} and state.pods["g"].row == a
    assert state.requested[a, :4].tolist() == [1000, 0, 0, 1]


def _counted(state: ClusterState) -> dict:
    """Everything a placement changes in the state, in comparable form."""
    rows = state.rows
    return {
        "requested": state.requested[:rows].tolist(),
        "nonzero": state.nonzero_requested[:rows].tolist(),
        "pods": {
            k: (
                r.row,
                r.namespace,
                r.labels,
                dict(r.requests),
                r.nonzero,
                list(r.ports),
                state.groups[r.group].labels,
                r.affinity,
                r.assumed,
            )
            for k, r in state.pods.items()
        },
        "on_row": [sorted(keys) for keys in state.pods_on_row],
        "ports": [dict(ports) for ports in state.ports],
        "affinity": list(state.affinity_pods_on_row),
        "groups": sorted(
            (g.namespace, tuple(sorted(g.labels.items())), g.refs, sorted(g.per_row.items()))
            for g in state.groups
            if g.refs
        ),
        "ghosts": {name: sorted(pods) for name, pods in state.ghosts.items()},
    }


@pytest.mark.parametrize("resources", [True, False])
def test_placing_a_class_at_once_counts_as_placing_its_pods_one_by_one(resources):
    """add_placed_many (place_burst's commit, class by class) leaves the state exactly as
    add_placed per pod does: requests, ports, groups, affinity counts, pods moving from
    another row or from a ghost, and taking them all out again empties it."""

    def fresh() -> ClusterState:
        state = ClusterState()
        for name in ("a", "b", "c"):
            state.add_node(node(name))
        state.add_pod(pod("moved", "a", cpu="1", labels={"app": "x"}, ports=(80,)))
        state.add_pod(pod("ghost", "gone", cpu="1"))
        return state

    port = HostPort("0.0.0.0", "TCP", 80)
    keys = ["n1", "moved", "n2", "ghost", "n3"]
    rows = [1, 2, 1, 0, 2]
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}
    one_by_one, at_once = fresh(), fresh()
    cpu = one_by_one.resource_index["cpu"]
    parts = ("ns", (("app", "x"),), {cpu: 500}, (500, 0), [port], affinity)
    for key, row in zip(keys, rows, strict=True):
        one_by_one.add_placed(key, row, *parts, resources=resources)
    at_once.add_placed_many(keys, rows, *parts, resources=resources)
    assert _counted(at_once) == _counted(one_by_one)
    assert at_once.requested[1, cpu] == (1000 if resources else 0)
    for key in keys:
        one_by_one.remove_pod_key(key)
        at_once.remove_pod_key(key)
    assert _counted(at_once) == _counted(one_by_one)
    assert at_once.pods == {} and not any(at_once.pods_on_row)
    # The same pod twice in one call: the later placement wins, as one by one.
    twice, once = fresh(), fresh()
    twice.add_placed_many(["d", "d"], [0, 1], *parts, resources=resources)
    for row in (0, 1):
        once.add_placed("d", row, *parts, resources=resources)
    assert _counted(twice) == _counted(once)


def test_a_label_group_goes_with_its_last_pod_and_its_id_is_reused():
    state = ClusterState()
    state.add_node(node("a"))
    state.add_node(node("b"))
    state.add_pod(pod("j1", "a", labels={"job": "1"}))
    state.add_pod(pod("j2", "b", labels={"job": "1"}))
    state.add_pod(pod("ghost", "gone", labels={"job": "2"}))  # a pod of an unknown node
    assert len(state.group_ids) == 2
    state.remove_pod(pod("j1", "a"))
    assert len(state.group_ids) == 2  # j2 still holds it
    state.remove_pod(pod("j2", "b"))
    state.remove_pod(pod("ghost", "gone"))
    assert state.group_ids == {}
    assert all(not g.per_row and not g.labels for g in state.groups)
    # thousands of one-pod label sets (a Job's, a gang's) leave no pile behind
    for i in range(1000):
        state.add_pod(pod(f"u{i}", "a", labels={"controller-uid": str(i)}))
        state.remove_pod(pod(f"u{i}", "a"))
    assert len(state.groups) == 2
    state.add_pod(pod("k", "a", labels={"job": "3"}))
    (gid,) = state.group_ids.values()
    assert state.groups[gid].labels == {"job": "3"} and state.groups[gid].per_row == {0: 1}
    # a node that leaves keeps its pods' groups (as ghosts) until the pods go
    state.remove_node("a")
    assert len(state.group_ids) == 1
    state.remove_pod(pod("k", "a"))
    assert state.group_ids == {}


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("pod"), st.integers(0, 19), st.integers(0, 7), st.integers(0, 2)),
            st.tuples(st.just("placed"), st.integers(0, 19), st.integers(0, 7), st.integers(0, 2)),
            st.tuples(st.just("gone"), st.integers(0, 19), st.just(0), st.just(0)),
            st.tuples(st.just("node"), st.integers(0, 7), st.just(0), st.just(0)),
            st.tuples(st.just("unnode"), st.integers(0, 7), st.just(0), st.just(0)),
            st.tuples(st.just("count"), st.just(0), st.just(0), st.just(0)),
        ),
        max_size=60,
    )
)
def test_group_counts_kept_as_arrays_follow_every_record_as_the_dicts_do(steps):
    # Few rows, so that a group covers an eighth of them at once and is kept as an array
    # from its first count on; a frozen copy of the groups is summed from the dicts.
    state = ClusterState(capacity=2)
    for i in range(3):
        state.add_node(node(f"n{i}"))
    for kind, a, b, app in steps:
        labels = {"app": str(app)}
        if kind == "pod":
            state.add_pod(pod(f"p{a}", f"n{b}", cpu="10m", labels=labels))
        elif kind == "placed":
            row = state.row_of.get(f"n{b}")
            if row is not None:
                state.add_placed_many(
                    [f"p{a}"], [row], "ns", (("app", str(app)),), {}, (0, 0), [], None
                )
        elif kind == "gone":
            state.remove_pod_key(f"p{a}")
        elif kind == "node":
            state.add_node(node(f"n{a}"))
        elif kind == "unnode":
            state.remove_node(f"n{a}")
        gids = [gid for gid, group in enumerate(state.groups) if group.per_row]
        for gid in gids:
            from_arrays = state.group_counts([gid])
            from_dicts = state.group_counts([gid], state.frozen_groups())
            assert from_arrays.tolist() == from_dicts.tolist()
        assert (
            state.group_counts(gids).tolist()
            == state.group_counts(gids, state.frozen_groups()).tolist()
        )


_ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
        ]
    }
}


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("pod"), st.integers(0, 9), st.integers(0, 4), st.booleans()),
            st.tuples(st.just("placed"), st.integers(0, 9), st.integers(0, 4), st.booleans()),
            st.tuples(st.just("gone"), st.integers(0, 9), st.just(0), st.just(False)),
            st.tuples(st.just("node"), st.integers(0, 4), st.just(0), st.just(False)),
            st.tuples(st.just("unnode"), st.integers(0, 4), st.just(0), st.just(False)),
        ),
        max_size=60,
    )
)
def test_the_count_of_pods_carrying_terms_is_the_sum_of_its_rows_after_any_records(steps):
    """``affinity_pods``, which a burst reads instead of scanning every row, stays the sum
    of ``affinity_pods_on_row`` through pods added, placed, moved, removed, and nodes
    leaving (their pods become ghosts) and coming back."""
    state = ClusterState(capacity=2)
    for i in range(3):
        state.add_node(node(f"n{i}"))
    for kind, a, b, carries in steps:
        if kind == "pod":
            p = pod(f"p{a}", f"n{b}", cpu="10m", labels={"app": "x"})
            if carries:
                p["spec"]["affinity"] = _ANTI
            state.add_pod(p)
        elif kind == "placed":
            row = state.row_of.get(f"n{b}")
            if row is not None:
                affinity = _ANTI if carries else None
                state.add_placed_many(
                    [f"p{a}"], [row], "ns", (("app", "x"),), {}, (0, 0), [], affinity
                )
        elif kind == "gone":
            state.remove_pod_key(f"p{a}")
        elif kind == "node":
            state.add_node(node(f"n{a}"))
        elif kind == "unnode":
            state.remove_node(f"n{a}")
        assert state.affinity_pods == sum(state.affinity_pods_on_row)
    # and a state that counted some says so before the last goes
    assert (state.affinity_pods > 0) == any(state.affinity_pods_on_row)
