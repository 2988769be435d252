"""Synthetic clusters: seeded fleets of fake nodes and workloads of pods, as API JSON dicts.

The same dicts serve three uses: they are created on a real API server (kwok manages the
nodes), loaded in-process by ``kubesalvo simulate``, and saved as snapshots. Generation does
no I/O and is deterministic for a seed.

- ``catalog``: machine shapes, node pools (with their taints) and images.
- ``nodes``: ``make_nodes``, the fleet.
- ``pods``, ``terms``, ``recipes``: pod classes and the constraints they carry.
- ``workloads``: ``make_pods``/``make_batch``, the named burst shapes.
- ``stateful``: pods with a claim each on local PVs, and those storage objects.
- ``controllers``: the ReplicaSets and Jobs that would own a burst on a real cluster.
- ``existing``: running load, placed on the nodes before the burst.
- ``scenario``: a fleet plus workloads, from YAML (``bench/workloads/``), to a ``Snapshot``.
"""

from kubesalvo.core.synthetic.nodes import DEFAULT_FLEET, Fleet, make_nodes
from kubesalvo.core.synthetic.pods import namespace_objects, priority_class_objects
from kubesalvo.core.synthetic.scenario import (
    DEFAULT_SCENARIO,
    STATEFUL,
    WORKLOAD_SHAPES,
    FleetSpec,
    Scenario,
    ScenarioError,
    WorkloadSpec,
    parse_scenario,
    scenario_from_yaml,
)
from kubesalvo.core.synthetic.workloads import SHAPES, make_batch, make_pods

__all__ = [
    "DEFAULT_FLEET",
    "DEFAULT_SCENARIO",
    "SHAPES",
    "STATEFUL",
    "WORKLOAD_SHAPES",
    "Fleet",
    "FleetSpec",
    "Scenario",
    "ScenarioError",
    "WorkloadSpec",
    "make_batch",
    "make_nodes",
    "make_pods",
    "namespace_objects",
    "parse_scenario",
    "priority_class_objects",
    "scenario_from_yaml",
]
