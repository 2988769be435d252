"""The burst a benchmark creates: a scenario from ``bench/`` or a bare workload shape.

``--workload`` names a YAML file (a path, or a file in ``bench/e2e/`` or
``bench/workloads/`` of the source tree, with or without ``.yaml``) or one of the shapes of
``core.synthetic`` (``replicasets``, ``mixed``, ...). Every contender gets the same pods,
generated from the same seed; only ``spec.schedulerName`` and a suffix of the names differ,
and each pod carries the run label by which it is watched and deleted.

A scenario file may hold a ``bench`` section that only ``kubesalvo bench`` reads
(``BenchSettings``): how the burst is created (bare ``pods``, ``deployments`` or
``scale-up``, see ``rollout``; ``hpa``, see ``hpa``, with its ``hpa`` mapping), an
open-loop ``rate`` and ``duration``, a ``lifetime`` after which each bound pod is
deleted again (churn), and a ``note`` the results carry (e.g. that a scenario runs with
the default profile until its plugins exist).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesalvo.core.snapshot import Snapshot
from kubesalvo.core.synthetic import (
    SHAPES,
    FleetSpec,
    Scenario,
    WorkloadSpec,
    scenario_from_yaml,
)
from kubesalvo.core.synthetic.nodes import apportion
from kubesalvo.sched.bench.device_settings import DeviceSettings, DeviceSettingsError
from kubesalvo.sched.bench.device_settings import parse as parse_devices
from kubesalvo.sched.bench.hpa import HpaSettings, HpaSettingsError
from kubesalvo.sched.bench.hpa import parse as parse_hpa

RUN_LABEL = "kubesalvo.io/bench-run"
# The source tree's scenario folders (present in a checkout and an editable install). The
# end-to-end scenarios come first: `gangs` and `large` name both an end-to-end scenario
# and an in-process workload file, and `kubesalvo bench` means the end-to-end one.
SOURCE_ROOT = Path(__file__).resolve().parents[2]
SEARCH_DIRS = (SOURCE_ROOT / "bench" / "e2e", SOURCE_ROOT / "bench" / "workloads")

Object = dict[str, Any]


class WorkloadError(ValueError):
    """``--workload`` names neither a scenario file nor a shape, or its ``bench`` section
    is invalid."""


# How a run creates its burst (``BenchSettings.create``; see ``rollout``).
PODS = "pods"
DEPLOYMENTS = "deployments"
SCALE_UP = "scale-up"
HPA = "hpa"
CREATE_MODES = (PODS, DEPLOYMENTS, SCALE_UP, HPA)
_BENCH_FIELDS = ("create", "rate", "duration", "lifetime", "note", "hpa", "devices")


@dataclass(frozen=True)
class BenchSettings:
    """A scenario file's ``bench`` section (all optional)."""

    create: str = PODS
    rate: float | None = None
    duration: float | None = None
    lifetime: float | None = None
    note: str = ""
    hpa: HpaSettings | None = None
    # GPUs the burst's pods claim through DRA (``devices``), None without them.
    devices: DeviceSettings | None = None


def load_scenario(workload: str) -> Scenario:
    """The scenario ``workload`` names, at its own size (see ``resized``)."""
    path = _find(workload)
    if path is not None:
        document = yaml.safe_load(path.read_text())
        if isinstance(document, dict) and "bench" in document:
            document = {k: v for k, v in document.items() if k != "bench"}
            return scenario_from_yaml(yaml.safe_dump(document), str(path))
        return scenario_from_yaml(path.read_text(), str(path))
    if workload in SHAPES:
        return Scenario(
            name=workload,
            seed=1,
            fleet=FleetSpec(nodes=5000),
            workloads=(WorkloadSpec(shape=workload, pods=10_000),),
        )
    files = sorted(
        p.stem for folder in SEARCH_DIRS if folder.is_dir() for p in folder.glob("*.yaml")
    )
    raise WorkloadError(
        f"unknown workload {workload!r}; accepted: a scenario file, one of "
        f"{', '.join(files) or '(no scenario files found)'}, or a shape: {', '.join(SHAPES)}"
    )


def load_settings(workload: str) -> BenchSettings:
    """The ``bench`` section of the scenario file ``workload`` names (defaults for a shape
    or a file without one); raises WorkloadError naming the field at fault."""
    path = _find(workload)
    if path is None:
        return BenchSettings()
    document = yaml.safe_load(path.read_text())
    section = document.get("bench") if isinstance(document, dict) else None
    if section is None:
        return BenchSettings()
    where = f"{path}: bench"
    if not isinstance(section, dict):
        raise WorkloadError(f"{where}: expected a mapping, got {type(section).__name__}")
    for key in section:
        if key not in _BENCH_FIELDS:
            raise WorkloadError(
                f"{where}.{key}: unknown field; accepted: {', '.join(_BENCH_FIELDS)}"
            )
    create = section.get("create", PODS)
    if create not in CREATE_MODES:
        raise WorkloadError(f"{where}.create: {create!r}; accepted: {', '.join(CREATE_MODES)}")
    numbers = {}
    for key in ("rate", "duration", "lifetime"):
        value = section.get(key)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not value > 0
            or not math.isfinite(value)
        ):
            raise WorkloadError(f"{where}.{key}: expected a positive number, got {value!r}")
        numbers[key] = None if value is None else float(value)
    note = section.get("note", "")
    if not isinstance(note, str):
        raise WorkloadError(f"{where}.note: expected a string, got {note!r}")
    autoscaling = None
    if create == HPA or "hpa" in section:
        if create != HPA:
            raise WorkloadError(f"{where}.hpa: only with create: {HPA}")
        try:
            autoscaling = parse_hpa(section.get("hpa"), f"{where}.hpa")
        except HpaSettingsError as error:
            raise WorkloadError(str(error)) from None
    claimed = None
    if "devices" in section:
        if create != PODS:
            raise WorkloadError(f"{where}.devices: only with create: {PODS}")
        try:
            claimed = parse_devices(section["devices"], f"{where}.devices")
        except DeviceSettingsError as error:
            raise WorkloadError(str(error)) from None
    return BenchSettings(
        create=create, note=note.strip(), hpa=autoscaling, devices=claimed, **numbers
    )


def _find(workload: str) -> Path | None:
    direct = Path(workload).expanduser()
    if direct.is_file():
        return direct
    for folder in SEARCH_DIRS:
        for name in (workload, f"{workload}.yaml"):
            if (folder / name).is_file():
                return folder / name
    return None


def with_pending(scenario: Scenario, pods: int) -> Scenario:
    """The scenario with ``pods`` pending pods split over its pending workloads by their
    shares; the running (``bound``) workloads stay as they are."""
    pending = [i for i, w in enumerate(scenario.workloads) if not w.bound]
    if not pending:
        raise WorkloadError(f"scenario {scenario.name} has no pending workload to create")
    counts = apportion(pods, [float(scenario.workloads[i].pods) or 1.0 for i in pending])
    workloads = list(scenario.workloads)
    for index, count in zip(pending, counts, strict=True):
        workloads[index] = dataclasses.replace(workloads[index], pods=count)
    return dataclasses.replace(scenario, workloads=tuple(workloads))


def generate(scenario: Scenario, scheduler_name: str) -> Snapshot:
    """The cluster with its burst addressed to ``scheduler_name``."""
    return scenario.generate(scheduler_name=scheduler_name)


def burst(cluster: Snapshot, run_id: str) -> list[Object]:
    """The pending pods, each with a metadata copy carrying ``RUN_LABEL=run_id`` and a name
    ending in ``run_id``'s last part.

    Names differ between runs because kwok deletes a pod by name, without its UID: a
    deletion of the last run's pod that kwok carries out late (it lags by minutes under
    load) would otherwise remove the next run's pod of the same name. Pods of one class
    share nested parts of their spec; only metadata is copied, the rest is never changed.
    """
    suffix = run_id.rsplit("-", 1)[-1]
    pods = []
    for pod in cluster.pending_pods():
        metadata = dict(pod["metadata"])
        metadata["name"] = f"{metadata['name']}-{suffix}"
        metadata["labels"] = {**metadata.get("labels", {}), RUN_LABEL: run_id}
        pods.append({**pod, "metadata": metadata})
    return pods


def pod_key(pod: Object) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"
