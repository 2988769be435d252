"""The burst a benchmark creates: a scenario from ``bench/`` or a bare workload shape.

``--workload`` names a YAML file (a path, or a file in ``bench/workloads/`` or
``bench/e2e/`` of the source tree, with or without ``.yaml``) or one of the shapes of
``core.synthetic`` (``replicasets``, ``mixed``, ...). Every contender gets the same pods,
generated from the same seed; only ``spec.schedulerName`` and a suffix of the names differ,
and each pod carries the run label by which it is watched and deleted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesalvo.core.snapshot import Snapshot
from kubesalvo.core.synthetic import (
    SHAPES,
    FleetSpec,
    Scenario,
    WorkloadSpec,
    scenario_from_yaml,
)

RUN_LABEL = "kubesalvo.io/bench-run"
# The source tree's scenario folders (present in a checkout and an editable install).
SOURCE_ROOT = Path(__file__).resolve().parents[2]
SEARCH_DIRS = (SOURCE_ROOT / "bench" / "workloads", SOURCE_ROOT / "bench" / "e2e")

Object = dict[str, Any]


class WorkloadError(ValueError):
    """``--workload`` names neither a scenario file nor a shape."""


def load_scenario(workload: str) -> Scenario:
    """The scenario ``workload`` names, at its own size (see ``resized``)."""
    path = _find(workload)
    if path is not None:
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


def _find(workload: str) -> Path | None:
    direct = Path(workload).expanduser()
    if direct.is_file():
        return direct
    for folder in SEARCH_DIRS:
        for name in (workload, f"{workload}.yaml"):
            if (folder / name).is_file():
                return folder / name
    return None


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
