"""Where a simulated cluster comes from: a scenario (built in, a workload shape or a YAML
file) generated in-process, or a msgpack snapshot read from disk.

``build_cluster`` turns the command line's choice into a ``Cluster``: the snapshot (nodes,
running pods, the pending burst) plus a line saying where it came from and how long it
took to produce. Nothing here schedules; ``run`` does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from kubesalvo.core.snapshot import Snapshot
from kubesalvo.core.synthetic import (
    DEFAULT_SCENARIO,
    WORKLOAD_SHAPES,
    FleetSpec,
    Scenario,
    WorkloadSpec,
    scenario_from_yaml,
)
from kubesalvo.sched.snapshot import files as snapshot_files

__all__ = [
    "DEFAULT_NODES",
    "SHAPE_PODS",
    "Cluster",
    "ClusterChoice",
    "SimulateError",
    "build_cluster",
]

DEFAULT_NODES = 5000
# Burst sizes of the speed targets for each shape (issue 3): ReplicaSet and fully
# heterogeneous bursts of 10,000 pods, and the default mixed burst of 20,000; a stateful
# burst takes 80% of the local PVs (two a node).
SHAPE_PODS = {
    "replicasets": 10_000,
    "distinct": 10_000,
    "mixed": 20_000,
    "gangs": 4_000,
    "stateful": 8_000,
}


class SimulateError(ValueError):
    """Input that cannot be simulated; the message says what and where."""


@dataclass(frozen=True)
class ClusterChoice:
    """What the command line asked for (None: not given)."""

    scenario_file: str | None = None
    workload: str | None = None
    snapshot_file: str | None = None
    nodes: int | None = None
    pods: int | None = None
    classes: int | None = None
    seed: int | None = None
    owners: bool | None = None  # --workload replicasets: ReplicaSets own the pods (default)


@dataclass
class Cluster:
    snapshot: Snapshot
    source: str  # for people: "synthetic scenario default seed 1", a file name
    generate_seconds: float  # generating or reading the snapshot
    # the generated cluster's seed, or --seed with a snapshot (0 without): ties between
    # equally scored nodes are drawn with it
    seed: int = 0


def _scenario(choice: ClusterChoice) -> Scenario:
    if choice.scenario_file is not None:
        path = Path(choice.scenario_file)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or error
            raise SimulateError(f"{path}: cannot read scenario: {reason}") from error
        return scenario_from_yaml(text, str(path))
    if choice.workload is not None:
        if choice.workload not in WORKLOAD_SHAPES:
            accepted = ", ".join(WORKLOAD_SHAPES)
            raise SimulateError(
                f"--workload: unknown shape {choice.workload!r}; accepted: {accepted}"
            )
        pods = SHAPE_PODS[choice.workload]
        workload = WorkloadSpec(shape=choice.workload, pods=pods, classes=choice.classes or 10)
        return Scenario(
            name=choice.workload,
            fleet=FleetSpec(nodes=DEFAULT_NODES),
            workloads=(workload,),
            seed=DEFAULT_SCENARIO.seed,
        )
    return DEFAULT_SCENARIO


def _check_snapshot_choice(choice: ClusterChoice) -> None:
    for flag, value in (
        ("--nodes", choice.nodes),
        ("--pods", choice.pods),
        ("--classes", choice.classes),
        ("--owners", choice.owners),
    ):
        if value is not None:
            raise SimulateError(
                f"{flag} does not apply to --snapshot (the snapshot fixes the cluster)"
            )


def build_cluster(choice: ClusterChoice) -> Cluster:
    """The cluster to simulate; ``SimulateError``, ``ScenarioError`` or ``SnapshotError``
    when the input cannot be used."""
    began = time.perf_counter()
    if choice.snapshot_file is not None:
        _check_snapshot_choice(choice)
        snapshot = snapshot_files.load(choice.snapshot_file)
        source = f"snapshot {choice.snapshot_file}"
        if snapshot.source:
            source += f" ({snapshot.source})"
        seed = choice.seed or 0
        return Cluster(snapshot, source, time.perf_counter() - began, seed)
    for flag, value in (("--classes", choice.classes), ("--owners", choice.owners)):
        if value is not None and choice.workload != "replicasets":
            raise SimulateError(f"{flag} applies to --workload replicasets only")
    scenario = _scenario(choice)
    scenario = scenario.resized(nodes=choice.nodes, pods=choice.pods)
    seed = scenario.seed if choice.seed is None else choice.seed
    owners = choice.workload == "replicasets" and choice.owners is not False
    snapshot = scenario.generate(seed=seed, owners=owners)
    source = f"synthetic scenario {scenario.name} seed {seed}"
    if owners:
        source += ", owned by ReplicaSets"
    return Cluster(snapshot, source, time.perf_counter() - began, seed)
