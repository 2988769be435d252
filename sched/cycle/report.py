"""Reporting a pod's failed attempt: one function for every way an attempt fails.

kube-scheduler's one failure handler (``handleSchedulingFailure``): the FailedScheduling
event and the PodScheduled=False condition (reason Unschedulable, or SchedulerError for
an error), the attempt's metric, and the pod back to the queue - parked with the plugins
that rejected it, or backed off as an error when none did.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubesalvo.sched import metrics as m
from kubesalvo.sched.events import SCHEDULER_ERROR, UNSCHEDULABLE, EventRecorder, ObjectRef
from kubesalvo.sched.queue import QueuedPod, SchedulingQueue

__all__ = ["pod_scheduled_status", "ref", "report_failure", "with_postfilter"]


def ref(qp: QueuedPod) -> ObjectRef:
    meta = qp.pod.metadata
    return ObjectRef(meta.namespace, meta.name, meta.uid)


def pod_scheduled_status(qp: QueuedPod) -> str | None:
    for condition in qp.pod.status.conditions:
        if condition.type == "PodScheduled":
            return str(condition.status)
    return None


def with_postfilter(message: str, postfilter_message: str) -> str:
    """The burst's FailedScheduling text with the post-filter part appended: the same text
    ``framework.fit_error_message(n, reasons, postfilter_message=...)`` gives, built on the
    burst's own message so that a PreFilter rejection keeps its form."""
    return f"{message} {postfilter_message}" if postfilter_message else message


def report_failure(
    queue: SchedulingQueue,
    recorder: EventRecorder | None,
    metrics: m.SchedulerMetrics | None,
    qp: QueuedPod,
    profile: str,
    message: str,
    elapsed: float,
    *,
    error: bool,
    plugins: Iterable[str] = (),
    record: bool = True,
) -> None:
    """Report the failed attempt and requeue the pod.

    ``error``: the attempt failed with an error (a plugin's, a preemption not written, a
    bind refused), reported as kube-scheduler reports an error status; else the pod is
    unschedulable and ``plugins`` rejected it. ``record`` False: no event or condition
    (a replica that does not lead writes none).
    """
    if record and recorder is not None:
        recorder.failed_scheduling(ref(qp), message)
        recorder.pod_condition(
            ref(qp),
            SCHEDULER_ERROR if error else UNSCHEDULABLE,
            message,
            current_status=pod_scheduled_status(qp),
        )
    if metrics is not None:
        metrics.observe_attempt(m.ERROR if error else m.UNSCHEDULABLE, profile, elapsed)
    queue.add_unschedulable(qp, plugins)
