"""Informers: list and watch nodes, pods, namespaces and PodDisruptionBudgets, and the
workloads default spreading reads (``workloads``: Services, ReplicationControllers,
ReplicaSets, StatefulSets).

``watch`` produces the stream (paginated list, watch with bookmarks, relist on 410,
reconnect with backoff), ``store`` turns it into exactly-once changes, ``informer`` runs
the two and calls the handlers, ``models`` holds the typed msgspec views of the objects
(see ``models.to_api_dict`` for the dicts ``kubesalvo.core`` takes).
"""

from kubesalvo.sched.informers.informer import Handler, Informer, wait_synced
from kubesalvo.sched.informers.models import to_api_dict
from kubesalvo.sched.informers.store import (
    ADDED,
    DELETED,
    MODIFIED,
    SYNCED,
    Change,
    Store,
    object_key,
)
from kubesalvo.sched.informers.watch import (
    NAMESPACES,
    NODES,
    PODDISRUPTIONBUDGETS,
    PODS,
    Event,
    Gone,
    Listed,
    Resource,
    WatchSettings,
    WatchState,
    infinite_watch,
)

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "NAMESPACES",
    "NODES",
    "PODDISRUPTIONBUDGETS",
    "PODS",
    "SYNCED",
    "Change",
    "Event",
    "Gone",
    "Handler",
    "Informer",
    "Listed",
    "Resource",
    "Store",
    "WatchSettings",
    "WatchState",
    "infinite_watch",
    "object_key",
    "to_api_dict",
    "wait_synced",
]
