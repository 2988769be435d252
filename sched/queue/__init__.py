"""kubesalvo's scheduling queue: activeQ, backoffQ, unschedulable and gated pods.

See ``queue`` for the behaviour (kube-scheduler's PriorityQueue, drained in bursts),
``cluster_events`` for the cluster events that bring parked pods back (each plugin's
queueing hint, which skips events that cannot help, is its module's: the registry's
``queueing_hints``), ``sorting`` for the QueueSort plugins and ``clock`` for the clocks (a
fake one for tests).
"""

from kubesalvo.sched.queue.clock import Clock, FakeClock, MonotonicClock
from kubesalvo.sched.queue.cluster_events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    PLUGIN_EVENTS,
    ActionType,
    ClusterEvent,
    EventResource,
    node_update_events,
    pod_update_events,
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
    "EventResource",
    "FakeClock",
    "MonotonicClock",
    "QueueName",
    "QueuedPod",
    "SchedulingQueue",
    "node_update_events",
    "pod_key",
    "pod_update_events",
    "register_queue_sort",
]
