"""The web view's node table for one pod, worked out by the reference: feasible nodes by
total score with each score plugin's part, the chosen node marked (and kept when it is
past the bound), and the infeasible nodes closest first with what each lacks."""

from __future__ import annotations

from kubesalvo.core.profile import Profile
from kubesalvo.sched.web import verdicts
from kubesalvo.sched.web.verdicts import node_table


def node(name: str, cpu: str, taints: list[dict[str, str]] | None = None, pods: str = "110"):
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": taints or []},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": pods},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str, cpu: str, node_name: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": spec}


TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]


def test_feasible_nodes_come_by_total_with_every_score_plugin_and_the_chosen_marked():
    nodes = [node("small", "2"), node("big", "16"), node("mid", "4")]
    target = pod("web", "1", node_name="mid")
    table = node_table(target, nodes, [target], [], Profile.default(), chosen="mid")
    feasible = [row for row in table["rows"] if row["feasible"]]
    assert [row["node"] for row in feasible] == ["big", "mid", "small"]
    assert table["plugins"] == [name for name, _ in Profile.default().scores]
    for row in feasible:
        assert row["total"] == sum(row["plugins"].values())
        assert set(row["plugins"]) == set(table["plugins"])
    assert [row["node"] for row in table["rows"] if row["chosen"]] == ["mid"]
    assert (table["nodes"], table["feasible"], table["infeasible"]) == (3, 3, 0)


def test_a_pending_pods_closest_nodes_come_first_with_what_each_lacks():
    nodes = [
        node("tiny", "1"),  # too small however empty: no preemption can help
        node("busy", "4"),  # big enough, 1500m short while its pod runs
        node("fuller", "4"),  # big enough, 3 cpus short
        node("tainted", "16", TAINT),
    ]
    running = [pod("a", "2500m", "busy"), pod("b", "4", "fuller")]
    target = pod("web", "3")
    table = node_table(target, nodes, [*running, target], [], Profile.default())
    assert table["feasible"] == 0
    rows = table["rows"]
    assert [row["node"] for row in rows] == ["busy", "fuller", "tainted", "tiny"]
    busy, fuller, tainted, tiny = rows
    assert busy["reasons"] == ["Insufficient cpu"] and busy["lacks"] == ["cpu: 1500m short"]
    assert not busy["unresolvable"]
    assert fuller["lacks"] == ["cpu: 3000m short"]
    assert tainted["reasons"] == ["node(s) had untolerated taint(s)"]
    assert tainted["lacks"] == [] and tainted["unresolvable"]
    assert tiny["unresolvable"] and tiny["lacks"] == ["cpu: 2000m short"]
    assert table["reasons"] == {
        "Insufficient cpu": 3,
        "node(s) had untolerated taint(s)": 1,
    }


def test_a_full_pod_count_is_something_a_node_lacks():
    nodes = [node("one-slot", "8", pods="1")]
    running = [pod("a", "100m", "one-slot")]
    table = node_table(pod("web", "100m"), nodes, running, [], Profile.default())
    assert table["rows"][0]["lacks"] == ["pods: 1 of 1 used"]


def test_the_table_is_bounded_and_keeps_the_chosen_node_past_the_bound(monkeypatch):
    monkeypatch.setattr(verdicts, "FEASIBLE_ROWS", 3)
    monkeypatch.setattr(verdicts, "CLOSEST_ROWS", 2)
    # Emptier nodes score higher (LeastAllocated): n0 has the least room, so comes last.
    nodes = [node(f"n{i}", str(2 + i)) for i in range(6)]
    nodes += [node(f"t{i}", "16", TAINT) for i in range(4)]
    target = pod("web", "1", node_name="n0")
    table = node_table(target, nodes, [target], [], Profile.default(), chosen="n0")
    feasible = [row["node"] for row in table["rows"] if row["feasible"]]
    assert feasible == ["n5", "n4", "n3", "n0"]
    assert [row["node"] for row in table["rows"] if not row["feasible"]] == ["t0", "t1"]
    assert (table["feasible"], table["infeasible"]) == (6, 4)


def test_a_chosen_node_the_reference_now_rejects_is_shown_with_its_reason(monkeypatch):
    monkeypatch.setattr(verdicts, "CLOSEST_ROWS", 0)
    nodes = [node("gone-full", "2"), node("other", "8")]
    target = pod("web", "1", node_name="gone-full")
    # Since the burst, another pod took the room this one had.
    later = pod("later", "1500m", "gone-full")
    table = node_table(target, nodes, [target, later], [], Profile.default(), chosen="gone-full")
    chosen = [row for row in table["rows"] if row["chosen"]]
    assert len(chosen) == 1 and not chosen[0]["feasible"]
    assert chosen[0]["lacks"] == ["cpu: 500m short"]


def test_what_a_node_lacks_is_said_in_the_units_people_write():
    target = pod("web", "9")
    target["spec"]["containers"][0]["resources"]["requests"]["memory"] = "10Gi"
    table = node_table(target, [node("n", "8")], [], [], Profile.default())
    assert table["rows"][0]["lacks"] == ["cpu: 1000m short", "memory: 2Gi short"]


def test_nodes_the_pods_own_selector_rules_out_come_after_every_other_node():
    """In a cluster of many pools, the nodes outside the pod's pool are never its closest,
    however much room they have: the too-small node of its own pool comes first."""
    pool = {"kubesalvo.io/pool": "a"}
    too_small = node("too-small", "1")
    too_small["metadata"]["labels"].update(pool)
    # other pools' nodes, rejected first by their taint (TaintToleration runs before
    # NodeAffinity), or by the pod's selector
    others = [node(f"other-{i}", "64", TAINT if i % 2 else None) for i in range(30)]
    target = pod("web", "3")
    target["spec"]["nodeSelector"] = pool
    table = node_table(target, [*others, too_small], [target], [], Profile.default())
    rows = table["rows"]
    assert rows[0]["node"] == "too-small" and rows[0]["lacks"] == ["cpu: 2000m short"]
    assert all(row["node"].startswith("other-") for row in rows[1:])


def test_a_pod_with_claims_is_tabled_with_its_device_filter_and_score():
    """Given the pod's DynamicResources cycle state (the view takes it as explain does),
    the table holds that plugin's Filter and v1.37 Score; without it the pod is refused
    as not modelled."""
    from tests.core.dra.test_place_devices import devices_for
    from tests.core.dra.test_place_devices import node as dra_node
    from tests.core.dra.test_score_first_available import scored_profile
    from tests.core.pernode.test_evaluator_dynamic_resources import h100_first

    p, objects = h100_first()
    nodes = [dra_node("a"), dra_node("b"), dra_node("c")]
    without = node_table(p, nodes, [], [], scored_profile())
    assert "not modelled" in without["error"]
    table = node_table(p, nodes, [], [], scored_profile(), devices=devices_for(p, objects))
    assert "error" not in table
    feasible = {row["node"]: row for row in table["rows"] if row["feasible"]}
    assert list(feasible) == ["a", "b"]
    # 8 points against 7, normalised 100 against 87, weight 2 (the kernel's, as
    # tests/core/pernode/test_evaluator_dynamic_resources.py holds).
    assert feasible["a"]["plugins"]["DynamicResources"] == 200
    assert feasible["b"]["plugins"]["DynamicResources"] == 174
    (c,) = [row for row in table["rows"] if not row["feasible"]]
    assert c["node"] == "c"
    assert c["reasons"] == ["cannot allocate all claims"]
    assert c["unresolvable"]
