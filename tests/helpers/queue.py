"""Builders for the scheduling queue's tests: small pods and a queue on a fake clock."""

from __future__ import annotations

from typing import Any

from kubesalvo.sched.informers import models
from kubesalvo.sched.queue import FakeClock, SchedulingQueue


def make_pod(
    name: str,
    *,
    priority: int | None = None,
    gates: tuple[str, ...] = (),
    labels: dict[str, str] | None = None,
    scheduler: str = "kubesalvo",
    cpu: str = "100m",
    tolerations: list[models.Toleration] | None = None,
) -> models.Pod:
    """A pod of one container asking for ``cpu``, in namespace default, uid ``uid-<name>``."""
    return models.Pod(
        metadata=models.ObjectMeta(
            name=name, namespace="default", uid=f"uid-{name}", labels=labels or {}
        ),
        spec=models.PodSpec(
            priority=priority,
            scheduler_name=scheduler,
            scheduling_gates=[models.PodSchedulingGate(name=g) for g in gates],
            tolerations=tolerations or [],
            containers=[
                models.Container(
                    name="c", resources=models.ResourceRequirements(requests={"cpu": cpu})
                )
            ],
        ),
    )


def make_queue(**kwargs: Any) -> tuple[SchedulingQueue, FakeClock]:
    """A queue (``kwargs`` go to SchedulingQueue) and the fake clock it reads."""
    clock = FakeClock()
    return SchedulingQueue(clock=clock, **kwargs), clock


def names_of(burst: list[Any]) -> list[str]:
    return [qp.pod.metadata.name for qp in burst]
