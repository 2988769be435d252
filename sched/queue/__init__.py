"""kubesalvo's scheduling queue: activeQ, backoffQ, unschedulable and gated pods.

See ``queue`` for the behaviour (kube-scheduler's PriorityQueue, drained in bursts),
``events`` for the cluster events that bring parked pods back, ``hints`` for the checks
that skip events which cannot help, ``sorting`` for the QueueSort plugins and ``clock``
for the clocks (a fake one for tests).
"""

from kubesalvo.sched.queue.clock import Clock, FakeClock, MonotonicClock
from kubesalvo.sched.queue.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    PLUGIN_EVENTS,
    ActionType,
    ClusterEvent,
    Resource,
    node_update_events,
    pod_update_events,
    rejecting_plugins,
)
from kubesalvo.sched.queue.queue import QueuedPod, QueueName, SchedulingQueue, pod_key
from kubesalvo.sched.queue.sorting import register_queue_sort

__all__ = [
    "ASSIGNED_POD_ADD",
    "ASSIGNED_POD_DELETE",
    "NODE_ADD",
    "NODE_DELETE",
    "PLUGIN_EVENTS",
    "ActionType",
    "Clock",
    "ClusterEvent",
    "FakeClock",
    "MonotonicClock",
    "QueueName",
    "QueuedPod",
    "Resource",
    "SchedulingQueue",
    "node_update_events",
    "pod_key",
    "pod_update_events",
    "register_queue_sort",
    "rejecting_plugins",
]
