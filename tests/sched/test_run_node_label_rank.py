"""NodeLabelRank, the example normalised score of docs/plugins.md, in ``kubesalvo run`` on
the real control plane, beside the default scores (NodeAffinity's and TaintToleration's
normalised scores too): with plain-1 labelled generation 5 and plain-0 generation 4, the
pods all go to plain-1 (the best rank) though the resource scores alone would spread
them; once plain-1 is full, the rest go to plain-0, now the best rank they can use."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tests.sched.test_app import CONFIG, SchedulerProcess, settled
from tests.sched.test_run_node_pool import nodes  # noqa: F401  (the fixture)

pytestmark = pytest.mark.integration

GEN = "example.com/generation"
RANK = """\
profiles:
- schedulerName: {name}
  plugins:
    score:
      enabled: [{{name: NodeLabelRank, weight: 100}}]
  pluginConfig:
  - {{name: NodeLabelRank, args: {{key: {key}, values: ["5", "4"]}}}}
"""


def test_node_label_rank_fills_the_best_ranked_feasible_node_first(
    control_plane,
    nodes,  # noqa: F811
    tmp_path: Path,
):
    nodes.label("plain-1", "5", key=GEN)
    nodes.label("plain-0", "4", key=GEN)
    name = f"rank-{secrets.token_hex(3)}"  # its own name: other tests' pods are not its
    config = CONFIG.format(max_burst=1000) + RANK.format(name=name, key=GEN)
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "node-label-rank")
    try:
        process.wait_ready()
        pods = [nodes.pod(f"web-{i}") for i in range(18)]  # 1 cpu each, plain-1 has 16
        for pod in pods:
            pod["spec"]["schedulerName"] = name
        control_plane.create(pods)
        settled(
            process,
            120,
            lambda: all(p["spec"].get("nodeName") for p in nodes.listed().values()),
        )
        placed = [p["spec"]["nodeName"] for p in nodes.listed().values()]
        assert placed.count(nodes.node_name("plain-1")) == 16
        assert placed.count(nodes.node_name("plain-0")) == 2
    finally:
        process.kill()
