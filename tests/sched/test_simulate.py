"""``kubesalvo simulate``: the summary adds up, every placement is feasible when checked
independently of the kernels, snapshots replay, scenarios, shapes and strategies work, and
bad input ends with a message on stderr and exit code 2. Sizes are small; no timing is
asserted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgpack
import pytest

from kubesalvo.core.snapshot import Snapshot
from kubesalvo.sched import cli
from kubesalvo.sched.simulate.run import burst_order
from kubesalvo.sched.snapshot import files as snapshot_files
from tests.helpers.feasibility import placement_problems

REQUIRED_FIELDS = (
    "nodes",
    "pods",
    "placed",
    "unplaced",
    "seconds",
    "placements_per_second",
    "kernel_placements_per_second",
    "peak_rss_bytes",
    "reasons",
    "utilisation",
)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the command line in-process: exit code, stdout, stderr."""
    try:
        code = cli.main(["simulate", *argv])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, err = run([*argv, "--json"], capsys)
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1, "--json prints exactly one JSON object"
    return json.loads(lines[0])


def key(pod: dict[str, Any]) -> tuple[str, str]:
    return pod["metadata"]["namespace"], pod["metadata"]["name"]


def simulate_and_check(argv: list[str], tmp_path: Path, capsys) -> dict[str, Any]:
    """Run with snapshots saved before and after the burst; every placement the burst made
    must be feasible (tests/helpers/feasibility.py) and add up to the summary's count."""
    before, after = tmp_path / "before.msgpack", tmp_path / "after.msgpack"
    summary = run_json([*argv, "--save-snapshot", str(before), "--save-placed", str(after)], capsys)
    # Pods bound before the burst were placed by someone else: only their use is counted.
    was_bound = {key(p) for p in snapshot_files.load(before).bound_pods()}
    placed = snapshot_files.load(after)
    bound = placed.bound_pods()
    assert placement_problems(bound, placed.nodes, judged_before=was_bound) == []
    assert sum(key(p) not in was_bound for p in bound) == summary["placed"]
    return summary


# --- the summary -------------------------------------------------------------------------


def test_json_summary_has_the_fields_and_counts_add_up(capsys):
    summary = run_json(["--nodes", "40", "--pods", "300", "--seed", "3"], capsys)
    for name in REQUIRED_FIELDS:
        assert name in summary
    assert summary["source"] == "synthetic scenario default seed 3"
    assert summary["nodes"] == 40 and summary["pods"] == 300
    assert summary["placed"] + summary["unplaced"] == summary["pods"]
    assert summary["unplaced"] > 0, "a mixed burst always holds pods no node can take"
    assert summary["placements_per_second"] > 0 and summary["peak_rss_bytes"] > 0
    assert 0 < summary["nodes_receiving"] <= summary["nodes_used_after"] <= summary["nodes"]
    # Each unplaced pod gives at least one reason; no reason counts more pods than failed.
    assert sum(r["pods"] for r in summary["reasons"]) >= summary["unplaced"]
    assert all(0 < r["pods"] <= summary["unplaced"] for r in summary["reasons"])
    assert sum(m["pods"] for m in summary["messages"]) <= summary["unplaced"]
    assert all(m["message"].startswith("0/40 nodes are available: ") for m in summary["messages"])
    pods = summary["utilisation"]["pods"]
    assert pods["requested_after"] - pods["requested_before"] == summary["placed"]
    for use in summary["utilisation"].values():
        assert use["requested_before"] <= use["requested_after"] <= use["allocatable"]


def test_same_seed_gives_the_same_placement(capsys):
    first = run_json(["--nodes", "30", "--pods", "200", "--seed", "5"], capsys)
    second = run_json(["--nodes", "30", "--pods", "200", "--seed", "5"], capsys)
    for name in ("placed", "reasons", "messages", "utilisation", "nodes_used_after"):
        assert first[name] == second[name]


def test_same_seed_draws_the_same_nodes_among_equal_scores_run_after_run(tmp_path, capsys):
    # ImageLocality alone, and no image on any node: every node scores 0 for every pod,
    # so each placement is a draw among all feasible nodes, from the --seed stream.
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
        "  plugins:\n"
        "    score:\n"
        "      disabled: [{name: '*'}]\n"
        "      enabled: [{name: ImageLocality, weight: 100}]\n"
    )

    def placements(seed: str, run: int) -> dict[str, str]:
        after = tmp_path / f"after-{seed}-{run}.msgpack"
        argv = ["--workload", "replicasets", "--nodes", "30", "--pods", "120", "--seed", seed]
        run_json([*argv, "--config", str(config), "--save-placed", str(after)], capsys)
        return {
            p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in snapshot_files.load(after).bound_pods()
        }

    first = placements("5", 1)
    assert len(first) == 120
    assert placements("5", 2) == first
    assert len(set(first.values())) > 10  # drawn over the nodes, not piled on the first


@pytest.mark.parametrize("workload", ["replicasets", "mixed", "distinct", "gangs", "stateful"])
def test_each_workload_shape_places_feasibly(workload, tmp_path, capsys):
    summary = simulate_and_check(
        ["--workload", workload, "--nodes", "60", "--pods", "400"], tmp_path, capsys
    )
    assert summary["pods"] == 400 and summary["placed"] > 0
    if workload == "replicasets":
        assert summary["classes"] == 10
    if workload == "distinct":
        assert summary["classes"] == 400


def test_replicasets_classes_option(capsys):
    summary = run_json(
        ["--workload", "replicasets", "--classes", "3", "--nodes", "20", "--pods", "90"], capsys
    )
    assert summary["classes"] == 3


def test_pods_fill_a_small_fleet_without_overcommit(tmp_path, capsys):
    # Far more pods than fit: every resource limit is reached somewhere.
    summary = simulate_and_check(
        ["--workload", "replicasets", "--nodes", "5", "--pods", "3000"], tmp_path, capsys
    )
    assert summary["unplaced"] > 0
    assert any(
        r["reason"].startswith("Insufficient ") or r["reason"] == "Too many pods"
        for r in summary["reasons"]
    )


@pytest.mark.parametrize(
    "strategy", ["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]
)
def test_each_strategy_places_feasibly(strategy, tmp_path, capsys):
    summary = simulate_and_check(
        ["--nodes", "50", "--pods", "300", "--strategy", strategy], tmp_path, capsys
    )
    assert summary["strategy"] == strategy


def test_most_allocated_packs_onto_fewer_nodes_than_least_allocated(capsys):
    argv = ["--workload", "replicasets", "--nodes", "100", "--pods", "200"]
    spread = run_json([*argv, "--strategy", "LeastAllocated"], capsys)
    packed = run_json([*argv, "--strategy", "MostAllocated"], capsys)
    assert packed["placed"] == spread["placed"] == 200
    assert packed["nodes_receiving"] < spread["nodes_receiving"]


def test_strategy_from_a_configuration_file(tmp_path, capsys):
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "  - schedulerName: kubesalvo\n"
        "    pluginConfig:\n"
        "      - name: NodeResourcesFit\n"
        "        args:\n"
        "          scoringStrategy:\n"
        "            type: MostAllocated\n"
    )
    summary = run_json(["--nodes", "20", "--pods", "50", "--config", str(config)], capsys)
    assert summary["strategy"] == "MostAllocated"


def test_table_output_shows_placements_utilisation_and_reasons(capsys):
    code, out, err = run(["--nodes", "30", "--pods", "300"], capsys)
    assert code == 0, err
    assert "synthetic scenario default seed 1" in out
    for text in ("placed", "placements/s, kernel only", "utilisation", "cpu", "memory", "pods"):
        assert text in out
    assert "FailedScheduling" in out and "0/30 nodes are available" in out


# --- snapshots and scenarios -------------------------------------------------------------


def test_snapshot_replay_places_exactly_as_the_generated_run(tmp_path, capsys):
    first_after = tmp_path / "first-after.msgpack"
    generated = tmp_path / "cluster.msgpack"
    argv = ["--nodes", "40", "--pods", "300", "--seed", "2"]
    first = run_json(
        [*argv, "--save-snapshot", str(generated), "--save-placed", str(first_after)], capsys
    )
    replay_after = tmp_path / "replay-after.msgpack"
    # the seed of the random choice among equally scored nodes, as the generated run's
    replay = run_json(
        ["--snapshot", str(generated), "--seed", "2", "--save-placed", str(replay_after)], capsys
    )
    assert replay["source"].startswith(f"snapshot {generated}")
    for name in ("nodes", "pods", "placed", "reasons", "messages", "utilisation"):
        assert replay[name] == first[name]

    def placements(path: Path) -> dict[str, str]:
        return {
            p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in snapshot_files.load(path).bound_pods()
        }

    assert placements(replay_after) == placements(first_after)


def test_snapshot_bound_pods_are_the_running_load_and_pending_pods_the_burst(tmp_path, capsys):
    after = tmp_path / "after.msgpack"
    first = run_json(["--nodes", "30", "--pods", "200", "--save-placed", str(after)], capsys)
    second = run_json(["--snapshot", str(after)], capsys)
    assert second["bound_pods"] == first["placed"]
    assert second["pods"] == first["unplaced"]
    for name, use in second["utilisation"].items():
        assert use["requested_before"] == first["utilisation"][name]["requested_after"]


def test_snapshot_with_running_pods_places_around_them(tmp_path, capsys):
    path = tmp_path / "cluster.msgpack"
    node = {
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "spec": {},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}},
    }

    def pod(name: str, cpu: str, node_name: str | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]
        }
        if node_name:
            spec["nodeName"] = node_name
        return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}

    snapshot_files.save(
        path,
        Snapshot(
            nodes=[node], pods=[pod("running", "1500m", "n1"), pod("a", "400m"), pod("b", "400m")]
        ),
    )
    summary = run_json(["--snapshot", str(path)], capsys)
    assert (summary["bound_pods"], summary["pods"], summary["placed"]) == (1, 2, 1)
    assert summary["reasons"] == [{"reason": "Insufficient cpu", "pods": 1, "nodes": 1}]
    assert summary["messages"] == [
        {"message": "0/1 nodes are available: 1 Insufficient cpu.", "pods": 1}
    ]
    assert summary["utilisation"]["cpu"]["requested_after"] == 1900


def test_scenario_file_with_running_load_and_resizing(tmp_path, capsys):
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        "name: tiny\n"
        "seed: 4\n"
        "fleet:\n"
        "  nodes: 25\n"
        "workloads:\n"
        "  - name: running\n"
        "    shape: replicasets\n"
        "    pods: 100\n"
        "    classes: 4\n"
        "    bound: true\n"
        "  - name: burst\n"
        "    shape: mixed\n"
        "    pods: 150\n"
    )
    summary = simulate_and_check(["--scenario", str(scenario)], tmp_path, capsys)
    assert summary["source"] == "synthetic scenario tiny seed 4"
    assert summary["nodes"] == 25
    assert summary["bound_pods"] > 0
    assert summary["bound_pods"] + summary["pods"] == 250
    assert summary["nodes_used_before"] > 0
    resized = run_json(["--scenario", str(scenario), "--nodes", "10", "--pods", "50"], capsys)
    assert resized["nodes"] == 10 and resized["bound_pods"] + resized["pods"] == 50


def test_bench_workload_files_are_accepted(capsys):
    # The small one runs as it is; the others are only resized to stay fast.
    folder = Path(__file__).resolve().parents[2] / "bench" / "workloads"
    assert run_json(["--scenario", str(folder / "small.yaml")], capsys)["nodes"] == 100
    for path in sorted(folder.glob("*.yaml")):
        summary = run_json(["--scenario", str(path), "--nodes", "10", "--pods", "40"], capsys)
        assert summary["placed"] + summary["unplaced"] == summary["pods"]


def test_burst_order_is_priority_first_then_arrival_and_leaves_gated_pods_out():
    def pod(name: str, **spec: Any) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "default"}, "spec": spec}

    snapshot = Snapshot(
        nodes=[],
        pods=[
            pod("low", priority=-5),
            pod("plain-1"),
            pod("by-class", priorityClassName="high"),
            pod("gated", priority=100, schedulingGates=[{"name": "wait"}]),
            pod("plain-2"),
            pod("top", priority=50),
            pod("bound", nodeName="n1", priority=1000),
        ],
        priorityclasses=[{"metadata": {"name": "high"}, "value": 10}],
    )
    burst, gated = burst_order(snapshot)
    assert [p["metadata"]["name"] for p in burst] == [
        "top",
        "by-class",
        "plain-1",
        "plain-2",
        "low",
    ]
    assert gated == 1


# --- bad input -----------------------------------------------------------------------------


def assert_bad_input(argv: list[str], capsys, *fragments: str) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


def test_missing_files_are_bad_input(tmp_path, capsys):
    missing = str(tmp_path / "missing")
    assert_bad_input(["--scenario", missing], capsys, "cannot read scenario", "missing")
    assert_bad_input(["--snapshot", missing], capsys, "cannot read snapshot")
    assert_bad_input(["--config", missing], capsys, "cannot read file")


def test_bad_scenario_names_the_field(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nfleet: {nodes: 10}\nworkloads:\n  - shape: mixed\n    pods: -1\n")
    assert_bad_input(["--scenario", str(path)], capsys, f"{path}: workloads[0].pods")
    path.write_text("name: [unclosed\n")
    assert_bad_input(["--scenario", str(path)], capsys, "not valid YAML")


def test_corrupt_snapshots_are_bad_input(tmp_path, capsys):
    path = tmp_path / "corrupt.msgpack"
    path.write_bytes(b"\x93\x01\x02")
    assert_bad_input(["--snapshot", str(path)], capsys, "not a kubesalvo snapshot")
    path.write_bytes(b"\xc1garbage")
    assert_bad_input(["--snapshot", str(path)], capsys, "msgpack could not decode it")
    document = {"format": "kubesalvo-snapshot", "version": 1, "nodes": [{"metadata": {}}]}
    path.write_bytes(msgpack.packb(document))
    assert_bad_input(["--snapshot", str(path)], capsys, "nodes[0].metadata.name")


def test_snapshot_with_a_malformed_quantity_names_the_object(tmp_path, capsys):
    path = tmp_path / "bad-quantity.msgpack"
    node = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "lots"}}}
    snapshot_files.save(path, Snapshot(nodes=[node], pods=[]))
    assert_bad_input(["--snapshot", str(path)], capsys, "nodes[0] (n1)", "lots")
    good = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1", "pods": "10"}}}
    bad_pod = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2x"}}}]},
    }
    snapshot_files.save(path, Snapshot(nodes=[good], pods=[bad_pod]))
    assert_bad_input(["--snapshot", str(path)], capsys, "pending pod default/p", "2x")


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--nodes", "0"], "argument --nodes: expected an integer >= 1"),
        (["--pods", "many"], "argument --pods: expected an integer, got 'many'"),
        (["--seed", "-1"], "argument --seed"),
        (["--workload", "everything"], "argument --workload: invalid choice"),
        (["--strategy", "Random"], "argument --strategy: invalid choice"),
        (["--workload", "mixed", "--classes", "3"], "--classes applies to --workload replicasets"),
        (["--workload", "mixed", "--scenario", "x.yaml"], "not allowed with argument"),
    ],
)
def test_bad_arguments_are_refused(argv, fragment, capsys):
    assert_bad_input(argv, capsys, fragment)


def test_size_options_do_not_apply_to_a_snapshot(tmp_path, capsys):
    path = tmp_path / "cluster.msgpack"
    snapshot_files.save(path, Snapshot(nodes=[], pods=[]))
    assert_bad_input(["--snapshot", str(path), "--pods", "5"], capsys, "--pods does not apply")


def test_unwritable_save_path_is_bad_input(tmp_path, capsys):
    target = str(tmp_path / "no-such-folder" / "out.msgpack")
    assert_bad_input(
        ["--nodes", "5", "--pods", "5", "--save-snapshot", target], capsys, "cannot save snapshot"
    )
