"""Scenarios: a fleet and its workloads, described in YAML the way scheduler_perf does.

::

    name: default
    seed: 1
    schedulerName: kubesalvo
    fleet:
      nodes: 5000
      region: us-east-1                          # optional
      zones: [us-east-1a, us-east-1b, us-east-1c] # optional
      cordonedFraction: 0.005                    # optional
      pools: {general: 10, gpu: 1}               # optional: relative weights of default pools
    workloads:
      - shape: mixed        # replicasets | distinct | mixed | gangs | stateful
        pods: 20000
        classes: 10         # replicasets only
        name: burst         # optional: prefix of pod names and app labels
        bound: false        # true: already running (placed by ``existing.place``)
        pvsPerNode: 2       # stateful only: local PVs on each node

A ``stateful`` workload also brings its StorageClass, local PVs and one claim per pod into
the snapshot's ``storage`` (``core.synthetic.stateful``); it is always pending.

``parse_scenario`` takes the YAML-loaded mapping and refuses an unknown field, a wrong type
or a bad value with ``ScenarioError`` naming the field path (``workloads[1].pods``).
``Scenario.generate`` builds the whole cluster as a ``Snapshot``, deterministic for the seed.
``generate(owners=True)`` gives each ReplicaSet-like class a ReplicaSet among the snapshot's
workloads and its pods a controller ``ownerReference`` to it, as a cluster's Deployments
have them (kube-scheduler's default spreading then applies to those pods). That is for
in-process placement only: created on a real API server, pods naming an owner that does not
exist would be deleted by the garbage collector (the benchmark creates real ReplicaSets
instead, see ``controllers``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import yaml

from kubesalvo.core.gc_pause import gc_paused
from kubesalvo.core.snapshot import Snapshot
from kubesalvo.core.synthetic import existing
from kubesalvo.core.synthetic.catalog import DEFAULT_POOLS
from kubesalvo.core.synthetic.controllers import REPLICA_SET_WORKLOADS, replica_set
from kubesalvo.core.synthetic.nodes import Fleet, apportion, make_nodes
from kubesalvo.core.synthetic.pods import namespace_objects, priority_class_objects
from kubesalvo.core.synthetic.stateful import make_stateful
from kubesalvo.core.synthetic.workloads import SHAPES, Batch, make_batch

# Beside the pod-class shapes: ``stateful``, pods with a claim each on local PVs (2 a node).
STATEFUL = "stateful"
WORKLOAD_SHAPES = (*SHAPES, STATEFUL)

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class ScenarioError(ValueError):
    """A scenario description that cannot be used; the message starts with the field path."""


@dataclass(frozen=True)
class FleetSpec:
    nodes: int
    region: str = "us-east-1"
    zones: tuple[str, ...] = ("us-east-1a", "us-east-1b", "us-east-1c")
    cordoned_fraction: float = 0.005
    # Weights of the default pools by name; None keeps the default mix.
    pools: tuple[tuple[str, float], ...] | None = None

    def fleet(self) -> Fleet:
        pools = DEFAULT_POOLS
        if self.pools is not None:
            weights = dict(self.pools)
            pools = tuple(
                dataclasses.replace(pool, weight=weights[pool.name])
                for pool in DEFAULT_POOLS
                if weights.get(pool.name, 0) > 0
            )
        return Fleet(
            pools=pools,
            region=self.region,
            zones=self.zones,
            cordoned_fraction=self.cordoned_fraction,
        )


@dataclass(frozen=True)
class WorkloadSpec:
    shape: str
    pods: int
    classes: int = 10
    name: str = ""
    bound: bool = False
    pvs_per_node: int = 2  # stateful only


@dataclass(frozen=True)
class Scenario:
    name: str
    fleet: FleetSpec
    workloads: tuple[WorkloadSpec, ...]
    seed: int = 0
    scheduler_name: str = "kubesalvo"
    description: str = ""

    @property
    def pod_count(self) -> int:
        return sum(w.pods for w in self.workloads)

    def resized(self, nodes: int | None = None, pods: int | None = None) -> Scenario:
        """The same mix at another size: ``pods`` is split over the workloads by their shares."""
        fleet = self.fleet if nodes is None else dataclasses.replace(self.fleet, nodes=nodes)
        workloads = self.workloads
        if pods is not None:
            shares = (
                [float(w.pods) for w in workloads] if self.pod_count else [1.0] * len(workloads)
            )
            counts = apportion(pods, shares) if workloads else []
            workloads = tuple(
                dataclasses.replace(w, pods=n) for w, n in zip(workloads, counts, strict=True)
            )
        return dataclasses.replace(self, fleet=fleet, workloads=workloads)

    def prefix(self, index: int) -> str:
        workload = self.workloads[index]
        if workload.name:
            return f"{workload.name}-"
        return "" if len(self.workloads) == 1 else f"w{index}-"

    def generate(
        self, seed: int | None = None, scheduler_name: str | None = None, *, owners: bool = False
    ) -> Snapshot:
        """The cluster: nodes, running pods (bound workloads), the pending burst, namespaces
        and priority classes; with ``owners``, the ReplicaSets owning ReplicaSet-like pods."""
        with gc_paused():
            return self._generate(
                self.seed if seed is None else seed,
                scheduler_name or self.scheduler_name,
                owners,
            )

    def _generate(self, seed: int, scheduler_name: str, owners: bool) -> Snapshot:
        fleet = self.fleet.fleet()
        # The snapshot is a running cluster: its nodes are Ready, as kwok keeps them. Its
        # objects are read, not changed, so nodes share their image entries.
        nodes = make_nodes(self.fleet.nodes, seed, fleet, ready=True, shared_images=True)
        bound: list[dict[str, Any]] = []
        pending: list[dict[str, Any]] = []
        workloads: list[dict[str, Any]] = []
        storage: dict[str, list[dict[str, Any]]] = {}
        for index, workload in enumerate(self.workloads):
            if workload.shape == STATEFUL:
                pods, objects = make_stateful(
                    workload.pods,
                    nodes,
                    scheduler_name=scheduler_name,
                    prefix=self.prefix(index),
                    pvs_per_node=workload.pvs_per_node,
                )
                pending.extend(pods)
                for kind, listed in objects.items():
                    known = {o["metadata"]["name"] for o in storage.get(kind, [])}
                    storage.setdefault(kind, []).extend(
                        o for o in listed if o["metadata"]["name"] not in known
                    )
                continue
            batch = make_batch(
                workload.pods,
                # Each workload draws from its own stream, so adding one changes no other.
                seed * 1009 + index + 1,
                workload.shape,
                classes=workload.classes,
                scheduler_name=scheduler_name,
                prefix=self.prefix(index),
                fleet=fleet,
            )
            pods = _owned_pods(batch, workloads) if owners else _pods(batch)
            if workload.bound:
                running, left = existing.place(pods, nodes, seed=seed * 1009 + index + 1)
                bound.extend(running)
                pending.extend(left)
            else:
                pending.extend(pods)
        return Snapshot(
            nodes=nodes,
            pods=bound + pending,
            namespaces=namespace_objects(),
            priorityclasses=priority_class_objects(),
            workloads=workloads,
            storage=storage,
            source=f"synthetic scenario {self.name} seed {seed}",
        )


def _pods(batch: Batch) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = []
    for pod_class, replicas in batch:
        pods.extend(pod_class.replicas(replicas))
    return pods


def _owned_pods(batch: Batch, workloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The batch's pods; each ReplicaSet-like class's ReplicaSet is appended to
    ``workloads`` and named as its pods' controller (each pod gets its own list)."""
    pods: list[dict[str, Any]] = []
    for pod_class, replicas in batch:
        replicas_of = pod_class.replicas(replicas)
        if pod_class.workload in REPLICA_SET_WORKLOADS and replicas_of:
            owner = replica_set(pod_class, replicas)
            meta = owner["metadata"]
            meta["uid"] = f"rs-{meta['namespace']}-{meta['name']}"
            reference = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
            for pod in replicas_of:
                pod["metadata"]["ownerReferences"] = [dict(reference)]
            workloads.append(owner)
        pods.extend(replicas_of)
    return pods


# --- parsing -------------------------------------------------------------------------------


def _mapping(value: Any, path: str, accepted: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ScenarioError(f"{path or 'scenario'}: expected a mapping, got {_kind(value)}")
    for key in value:
        if key not in accepted:
            where = f"{path}.{key}" if path else str(key)
            raise ScenarioError(f"{where}: unknown field; accepted: {', '.join(accepted)}")
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


# Far beyond any fleet or burst a machine can generate (large.yaml: 50,000 nodes and
# 100,000 pods): a bigger count would only end in an out-of-memory crash.
_MAX_COUNT = 10_000_000


def _int(value: Any, path: str, minimum: int, maximum: int | None = _MAX_COUNT) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ScenarioError(f"{path}: expected an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ScenarioError(f"{path}: expected an integer <= {maximum:,}, got {value!r}")
    return value


def _fraction(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ScenarioError(f"{path}: expected a number from 0 to 1, got {value!r}")
    return float(value)


def _weight(value: Any, path: str) -> float:
    # Pool weights are relative: {general: 3, gpu: 1} gives a quarter of GPU nodes.
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ScenarioError(f"{path}: expected a number >= 0, got {value!r}")
    return float(value)


def _text(value: Any, path: str, pattern: re.Pattern[str] | None = None) -> str:
    if not isinstance(value, str) or (pattern is not None and not pattern.match(value)):
        wanted = "a lowercase DNS label" if pattern is not None else "a string"
        raise ScenarioError(f"{path}: expected {wanted}, got {value!r}")
    return value


def _required(data: dict[str, Any], key: str, path: str) -> Any:
    if key not in data:
        raise ScenarioError(f"{path}.{key}" if path else f"{key}: required field is missing")
    return data[key]


def _parse_fleet(value: Any, path: str) -> FleetSpec:
    data = _mapping(value, path, ("nodes", "region", "zones", "cordonedFraction", "pools"))
    if "nodes" not in data:
        raise ScenarioError(f"{path}.nodes: required field is missing")
    spec = FleetSpec(nodes=_int(data["nodes"], f"{path}.nodes", 0))
    if "region" in data:
        spec = dataclasses.replace(spec, region=_text(data["region"], f"{path}.region", _NAME))
    if "zones" in data:
        zones = data["zones"]
        if not isinstance(zones, list) or not zones:
            raise ScenarioError(f"{path}.zones: expected a non-empty list, got {zones!r}")
        names = tuple(_text(z, f"{path}.zones[{i}]", _NAME) for i, z in enumerate(zones))
        if len(set(names)) != len(names):
            raise ScenarioError(f"{path}.zones: zone names must be unique")
        spec = dataclasses.replace(spec, zones=names)
    if "cordonedFraction" in data:
        fraction = _fraction(data["cordonedFraction"], f"{path}.cordonedFraction")
        spec = dataclasses.replace(spec, cordoned_fraction=fraction)
    if "pools" in data:
        pool_names = tuple(pool.name for pool in DEFAULT_POOLS)
        pools = _mapping(data["pools"], f"{path}.pools", pool_names)
        weights = tuple((name, _weight(w, f"{path}.pools.{name}")) for name, w in pools.items())
        if not any(weight > 0 for _, weight in weights):
            raise ScenarioError(f"{path}.pools: at least one pool needs a weight above 0")
        spec = dataclasses.replace(spec, pools=weights)
    return spec


def _parse_workload(value: Any, path: str) -> WorkloadSpec:
    data = _mapping(value, path, ("shape", "pods", "classes", "name", "bound", "pvsPerNode"))
    for key in ("shape", "pods"):
        if key not in data:
            raise ScenarioError(f"{path}.{key}: required field is missing")
    shape = data["shape"]
    if not isinstance(shape, str) or shape not in WORKLOAD_SHAPES:
        raise ScenarioError(
            f"{path}.shape: unknown shape {shape!r}; accepted: {', '.join(WORKLOAD_SHAPES)}"
        )
    spec = WorkloadSpec(shape=shape, pods=_int(data["pods"], f"{path}.pods", 0))
    if "classes" in data:
        if shape != "replicasets":
            raise ScenarioError(f"{path}.classes: only the replicasets shape has classes")
        spec = dataclasses.replace(spec, classes=_int(data["classes"], f"{path}.classes", 1))
    if "name" in data:
        spec = dataclasses.replace(spec, name=_text(data["name"], f"{path}.name", _NAME))
    if "bound" in data:
        if not isinstance(data["bound"], bool):
            raise ScenarioError(f"{path}.bound: expected true or false, got {data['bound']!r}")
        spec = dataclasses.replace(spec, bound=data["bound"])
        if spec.bound and shape == STATEFUL:
            raise ScenarioError(f"{path}.bound: a stateful workload is always pending")
    if "pvsPerNode" in data:
        if shape != STATEFUL:
            raise ScenarioError(f"{path}.pvsPerNode: only the stateful shape has local PVs")
        per_node = _int(data["pvsPerNode"], f"{path}.pvsPerNode", 0, 64)
        spec = dataclasses.replace(spec, pvs_per_node=per_node)
    return spec


def parse_scenario(data: Any) -> Scenario:
    """A ``Scenario`` from a YAML-loaded mapping, or ``ScenarioError`` naming the field."""
    top = _mapping(data, "", ("name", "description", "seed", "schedulerName", "fleet", "workloads"))
    name = _text(_required(top, "name", ""), "name", _NAME)
    fleet = _parse_fleet(_required(top, "fleet", ""), "fleet")
    raw_workloads = _required(top, "workloads", "")
    if not isinstance(raw_workloads, list):
        raise ScenarioError(f"workloads: expected a list, got {_kind(raw_workloads)}")
    workloads = tuple(_parse_workload(w, f"workloads[{i}]") for i, w in enumerate(raw_workloads))
    seen: dict[str, int] = {}
    for index, workload in enumerate(workloads):
        if workload.name and workload.name in seen:
            raise ScenarioError(
                f"workloads[{index}].name: {workload.name!r} is already used by "
                f"workloads[{seen[workload.name]}]"
            )
        seen[workload.name] = index
    scenario = Scenario(name=name, fleet=fleet, workloads=workloads)
    if "seed" in top:
        scenario = dataclasses.replace(scenario, seed=_int(top["seed"], "seed", 0, None))
    if "schedulerName" in top:
        scheduler = _text(top["schedulerName"], "schedulerName", _NAME)
        scenario = dataclasses.replace(scenario, scheduler_name=scheduler)
    if "description" in top:
        text = _text(top["description"], "description")
        scenario = dataclasses.replace(scenario, description=text)
    return scenario


def scenario_from_yaml(text: str, source: str = "<scenario>") -> Scenario:
    """Parse scenario YAML text; errors start with ``source``."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ScenarioError(f"{source}: not valid YAML: {error}") from error
    try:
        return parse_scenario(data)
    except ScenarioError as error:
        raise ScenarioError(f"{source}: {error}") from error


# The cluster ``kubesalvo simulate`` places when given nothing else (bench/workloads/default.yaml).
DEFAULT_SCENARIO = Scenario(
    name="default",
    description="A mixed burst on a production-like fleet of a few thousand nodes.",
    seed=1,
    fleet=FleetSpec(nodes=5000),
    workloads=(WorkloadSpec(shape="mixed", pods=20_000),),
)

__all__ = [
    "DEFAULT_SCENARIO",
    "STATEFUL",
    "WORKLOAD_SHAPES",
    "FleetSpec",
    "Scenario",
    "ScenarioError",
    "WorkloadSpec",
    "parse_scenario",
    "scenario_from_yaml",
]
