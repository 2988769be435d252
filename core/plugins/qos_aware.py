"""QosAware (kubesalvo): serve first the workload closest to violating its SLO.

A workload's *controller* is the owner its pods lead to: a Deployment (through the
ReplicaSet it made), a ReplicaSet, StatefulSet, Job (a CronJob through the Job it
made), or the bare pod itself. Its SLO is the fraction of its pods' lifetime they should
spend running rather than waiting for a node: the annotation ``kubesalvo.io/slo`` on the
pod (set in the pod template), else the ``defaultSLO`` arg (0.8).

Over the controller's live pods the runtime (``sched/qos.py``) totals the seconds spent
RUNNING, WAITING (created or requeued, not yet bound) and BINDING (bind call in flight);
``QOS = running / (running + waiting + binding)``. ``TTV``, the time to violation, is how
long until QOS falls below the SLO if the waiting pods keep waiting: every live pod adds a
second to the total each second and every running pod a second to ``running``, so with
``R`` running seconds, ``T`` total seconds, ``r`` running pods and ``n`` live pods, QOS
reaches the SLO ``S`` after ``(R - S*T) / (S*n - r)`` seconds (never, if ``S*n <= r``).
Once violated it is negative: minus the running seconds per pod the controller lacks to
meet its SLO, ``(R - S*T) / n``, so the further behind, the sooner served.

The queue pops the lowest TTV first, then the higher priority, then the pod created
earlier (one controller's pods stay in creation order), then the earlier queued. It is
enabled with the preBind and postBind points that tell it when binds start and end::

    plugins:
      queueSort: {enabled: [{name: QosAware}], disabled: [{name: "*"}]}
      preBind:   {enabled: [{name: QosAware}]}
      postBind:  {enabled: [{name: QosAware}]}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    POST_BIND,
    PRE_BIND,
    QUEUE_SORT,
    ErrorKind,
    FieldError,
    PluginSpec,
    check,
)

__all__ = [
    "DEFAULT_SLO",
    "NAME",
    "SLO_ANNOTATION",
    "Controller",
    "QosAwareArgs",
    "Totals",
    "controller_of",
    "go_duration",
    "invalid_slo_note",
    "parse_slo",
    "render_table",
]

NAME = names.QOS_AWARE
SLO_ANNOTATION = "kubesalvo.io/slo"
DEFAULT_SLO = 0.8


@dataclass(frozen=True)
class QosAwareArgs:
    """QosAwareArgs: the SLO of pods without the annotation, and how many controllers
    (those with the most waiting pods) get their own Prometheus series."""

    default_slo: float = DEFAULT_SLO
    top_controllers: int = 20

    # The keys in pluginConfig, where the generic camelCase would differ.
    FIELD_KEYS: ClassVar[dict[str, str]] = {"default_slo": "defaultSLO"}

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        found = []
        if not (isinstance(self.default_slo, float | int) and 0 < self.default_slo <= 1):
            found.append(
                FieldError("defaultSLO", ErrorKind.INVALID, self.default_slo, "must be in (0, 1]")
            )
        if not (isinstance(self.top_controllers, int) and self.top_controllers >= 1):
            found.append(
                FieldError(
                    "topControllers", ErrorKind.INVALID, self.top_controllers, "must be at least 1"
                )
            )
        return found


def parse_slo(raw: str | None, default: float) -> tuple[float, bool]:
    """The SLO an annotation value gives, and whether it was valid (absent is valid)."""
    if raw is None:
        return default, True
    try:
        value = float(raw.strip())
    except ValueError:
        return default, False
    if not (math.isfinite(value) and 0 < value <= 1):
        return default, False
    return value, True


def invalid_slo_note(raw: str, default: float) -> str:
    """The Warning event's text for an annotation that is not an SLO."""
    return (
        f"annotation {SLO_ANNOTATION}={raw!r} is not a number in (0, 1]: QosAware uses "
        f"the default SLO {default:g}"
    )


@dataclass(frozen=True, order=True)
class Controller:
    """A workload: ``kind`` is Deployment, ReplicaSet, StatefulSet, Job, CronJob, another
    controlling owner's kind, or Pod for a pod without one."""

    namespace: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.kind.lower()}/{self.name}"


# The owners a controlling ReplicaSet or Job may have in turn.
_PARENTS = {"ReplicaSet": "Deployment", "Job": "CronJob"}


def controller_of(
    namespace: str,
    pod_name: str,
    owners: Iterable[tuple[str, str, bool]],
    pod_template_hash: str | None,
    parent_of: Callable[[str, str, str], str | None] = lambda kind, ns, name: None,
) -> Controller:
    """The controller of a pod from its ownerReferences ``(kind, name, controller)``.

    ``parent_of(kind, namespace, name)`` names the Deployment of a ReplicaSet or the
    CronJob of a Job when the runtime knows it. Without it, a ReplicaSet named
    ``<deployment>-<pod-template-hash>`` (the pod's own label; how the Deployment
    controller names what it makes) belongs to that Deployment.
    """
    owner = next(((kind, name) for kind, name, controls in owners if controls), None)
    if owner is None:
        return Controller(namespace, "Pod", pod_name)
    kind, name = owner
    parent_kind = _PARENTS.get(kind)
    if parent_kind is not None:
        parent = parent_of(kind, namespace, name)
        if parent:
            return Controller(namespace, parent_kind, parent)
        suffix = f"-{pod_template_hash}" if pod_template_hash else None
        if kind == "ReplicaSet" and suffix and name.endswith(suffix) and len(name) > len(suffix):
            return Controller(namespace, "Deployment", name[: -len(suffix)])
    return Controller(namespace, kind, name)


@dataclass(frozen=True)
class Totals:
    """A controller's live pods at one moment: seconds in each state and pods in each."""

    slo: float
    running: float = 0.0
    waiting: float = 0.0
    binding: float = 0.0
    running_pods: int = 0
    waiting_pods: int = 0
    binding_pods: int = 0
    pods: int = 0  # live pods counted (started pods count as neither running nor waiting)

    @property
    def total(self) -> float:
        return self.running + self.waiting + self.binding

    @property
    def qos(self) -> float:
        return self.running / self.total if self.total > 0 else 1.0

    @property
    def ttv(self) -> float:
        """Seconds until QOS falls below the SLO if waiting pods keep waiting (inf:
        never; negative: violated, see the module docstring)."""
        surplus = self.running - self.slo * self.total
        if surplus < 0:
            return surplus / max(self.pods, 1)
        losing = self.slo * self.pods - self.running_pods
        if losing <= 0:
            return math.inf
        return surplus / losing


def go_duration(seconds: float) -> str:
    """A duration as Go's time.Duration prints it, to the millisecond: 2h4m6s,
    -2m22.541s, 591ms, 0s; "inf" for never."""
    if math.isinf(seconds):
        return "inf" if seconds > 0 else "-inf"
    millis = round(seconds * 1000)
    if millis == 0:
        return "0s"
    sign = "-" if millis < 0 else ""
    millis = abs(millis)
    if millis < 1000:
        return f"{sign}{millis}ms"
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, frac = divmod(rest, 1000)
    text = f"{secs}.{frac:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return f"{sign}{text}"


COLUMNS = ("CONTROLLER", "QOS/SLO", "TTV", "RUNNING", "WAITING", "BINDING")


def render_table(rows: Sequence[tuple[Controller, Totals]]) -> str:
    """The live table, one line per controller, columns right-aligned (the first
    left-aligned), as ``watch -n 2 curl -s localhost:10000/`` shows it."""
    lines = [COLUMNS] + [
        (
            str(controller),
            f"{t.qos:.2f}/{t.slo:.2f}",
            go_duration(t.ttv),
            go_duration(t.running),
            go_duration(t.waiting),
            go_duration(t.binding),
        )
        for controller, t in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(COLUMNS))]
    out = []
    for line in lines:
        cells = [line[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(line[1:], widths[1:], strict=True)]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out) + "\n"


def fallback_sort_key(qp: Any) -> tuple[Any, ...]:
    """Its order changes with time (each controller's time to violation): the running
    scheduler hands the queue its live table's key at every pop (``SchedulingQueue.
    key_factory``, see sched/qos.py). Where no table runs (``simulate`` places pods in the
    order given) it falls back to PrioritySort's order."""
    return (-qp.priority, qp.timestamp)


SPEC = PluginSpec(
    NAME,
    frozenset({QUEUE_SORT, PRE_BIND, POST_BIND}),
    args=QosAwareArgs,
    sort_key=fallback_sort_key,
)
