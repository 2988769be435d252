"""``kubesalvo simulate --config FILE`` with a profile enabling BurstPacking: the burst
lands on fewer nodes than under the default profile, at least as many pods placed, every
placement feasible when checked independently of the kernels (tests/helpers/feasibility.py);
and the same from a saved ``--snapshot``. Sizes are small; no timing is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sched.test_simulate import run_json, simulate_and_check

PACKED = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    reserve:
      enabled: [{name: BurstPacking}]
"""


@pytest.fixture
def packed(tmp_path: Path) -> str:
    path = tmp_path / "packed.yaml"
    path.write_text(PACKED)
    return str(path)


@pytest.mark.parametrize("workload", ["replicasets", "mixed", "distinct"])
def test_a_packed_burst_uses_fewer_nodes_and_every_placement_is_feasible(
    workload, packed, tmp_path, capsys
):
    argv = ["--workload", workload, "--nodes", "150", "--pods", "400", "--seed", "4"]
    plain = run_json(argv, capsys)
    (tmp_path / "packed-run").mkdir()
    summary = simulate_and_check([*argv, "--config", packed], tmp_path / "packed-run", capsys)
    assert summary["placed"] >= plain["placed"]
    assert summary["nodes_used_after"] < plain["nodes_used_after"]


def test_a_snapshot_replayed_with_burst_packing_uses_fewer_nodes(packed, tmp_path, capsys):
    generated = tmp_path / "cluster.msgpack"
    run_json(
        ["--workload", "replicasets", "--nodes", "100", "--pods", "250", "--seed", "5",
         "--save-snapshot", str(generated)],
        capsys,
    )  # fmt: skip
    plain = run_json(["--snapshot", str(generated)], capsys)
    summary = run_json(["--snapshot", str(generated), "--config", packed], capsys)
    assert summary["source"].startswith(f"snapshot {generated}")
    assert summary["placed"] == plain["placed"] == 250
    assert summary["nodes_used_after"] < plain["nodes_used_after"]
