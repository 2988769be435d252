"""The scheduler cache: ClusterState kept equal to the API server, plus the assumed pods.

kube-scheduler's cache split, over kubesalvo's numpy ``ClusterState``:

* The node, pod and namespace informers feed it: nodes become rows, pods that name a node
  (bound by anyone) are counted on their row, finished or deleted pods are taken off.
* The burst cycle **assumes** a placement at once (``place_burst`` commits it into the
  state), and records it here with :meth:`assumed`. Until the watch shows the pod bound,
  it is counted as assumed; when the watch shows it on the same node it is **confirmed**
  (counted once, now as bound); on another node it moves. A failed bind **forgets** it.
* An assumed pod whose bind succeeded but which the watch never shows bound (the watch
  fell behind a deletion we missed, for instance) **expires** ``assumed_ttl`` seconds after
  its bind finished, so that a lost confirmation cannot hold capacity forever.
* A pod bound to a node the state does not know yet (the node watch is behind the pod
  watch), or whose node was deleted, is kept by the state as a ghost of that node: it
  counts nowhere until the node (re)appears, as in kube-scheduler's cache.

The burst kernel reads and then writes the state in a worker thread. While a burst runs,
:meth:`frozen` is active and every change the event loop wants to make is queued, then
applied in order when the burst is done; the kernel never sees the state move under it,
and no lock is needed on the hot path. A pod's identity is its UID (``pod_key``), the same
key the queue uses, so a pod is counted at most once whatever order events come in.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubesalvo.core.state import ClusterState, pod_key
from kubesalvo.sched.informers.models import Pod, to_api_dict

__all__ = ["Assumed", "SchedulerCache", "same_for_state", "struct_key"]

log = logging.getLogger(__name__)

DEFAULT_ASSUMED_TTL = 60.0

Object = Mapping[str, Any]


@dataclass
class Assumed:
    """A placement the cycle made whose binding the watch has not shown yet."""

    node: str
    # Set when the bind call succeeded: the pod expires if unconfirmed past this time.
    deadline: float | None = None


FINISHED_PHASES = ("Succeeded", "Failed")


def _finished(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in FINISHED_PHASES


def _resize_reason(pod: Pod) -> str | None:
    for condition in pod.status.conditions:
        if condition.type == "PodResizePending":
            return condition.reason
    return None


def struct_key(pod: Pod) -> str:
    """``pod_key`` of the informer object, without its API dict."""
    meta = pod.metadata
    return meta.uid or f"{meta.namespace or 'default'}/{meta.name}"


def same_for_state(old: Pod, new: Pod) -> bool:
    """Whether an update of a bound pod leaves all that ClusterState counts of it as it was:
    its node, spec (requests, ports, affinity terms), namespace, labels, whether it is
    terminating or finished, and what the kubelet reports of its containers' resources.

    Most updates of a bound pod are the kubelet's (or kwok's) status reports; they need no
    conversion to the API dict and no recount (a 10,000-pod burst has 10,000 of them).
    """
    old_meta, new_meta = old.metadata, new.metadata
    return (
        old.spec == new.spec
        and old_meta.labels == new_meta.labels
        and old_meta.namespace == new_meta.namespace
        and (old_meta.deletion_timestamp is None) == (new_meta.deletion_timestamp is None)
        and (old.status.phase in FINISHED_PHASES) == (new.status.phase in FINISHED_PHASES)
        and _reported(old) == _reported(new)
        and _resize_reason(old) == _resize_reason(new)
    )


def _reported(pod: Pod) -> dict[str, tuple[object, dict[str, str]]]:
    """What the kubelet reports of the containers' resources, as the count reads it: a
    status without ``resources`` leaves the container at its spec (kwok reports none)."""
    status = pod.status
    return {
        entry.name: (entry.resources, entry.allocated_resources)
        for entry in (*status.container_statuses, *status.init_container_statuses)
        if entry.resources is not None
    }


class SchedulerCache:
    """ClusterState fed by the informers, with assume/confirm/forget/expire of placements."""

    def __init__(
        self,
        state: ClusterState | None = None,
        *,
        assumed_ttl: float = DEFAULT_ASSUMED_TTL,
        clock: Callable[[], float] = time.monotonic,
        api: Callable[[Pod], Object] = to_api_dict,
    ) -> None:
        self.state = state if state is not None else ClusterState()
        # A pod version's API dict: the runtime's memo (sched/informers/forms.py), so that
        # a bound pod the cycle or preemption converted already is not converted again.
        self._api = api
        self.assumed_ttl = assumed_ttl
        self._clock = clock
        self._assumed: dict[str, Assumed] = {}
        # (deadline, key) of every deadline set, earliest first: ``expire`` runs before
        # every burst and looks only at the deadlines past, not at every assumed pod (a
        # scan of thousands of binds in flight per burst under a steady stream). An entry
        # whose pod was confirmed or given a new deadline meanwhile is skipped.
        self._deadlines: list[tuple[float, str]] = []
        self._frozen = False
        self._deferred: list[Callable[[], object]] = []
        self.expired = 0

    # --- the burst's view -------------------------------------------------------------

    @contextlib.contextmanager
    def frozen(self) -> Iterator[ClusterState]:
        """Hold every change back while a worker thread reads and writes the state."""
        if self._frozen:
            raise RuntimeError("the cache is already frozen by another burst")
        self._frozen = True
        try:
            yield self.state
        finally:
            self._frozen = False
            deferred, self._deferred = self._deferred, []
            for change in deferred:
                change()

    def _do(self, change: Callable[[], object]) -> None:
        if self._frozen:
            self._deferred.append(change)
        else:
            change()

    @property
    def deferred(self) -> int:
        return len(self._deferred)

    # --- informers --------------------------------------------------------------------

    def sizes(self) -> dict[str, int]:
        """What the state holds, for the debug page: a long run must not grow these beyond
        what the cluster has (rows are reused, ghosts go when their node comes back)."""
        state = self.state
        return {
            "nodes": state.node_count,
            "rows": state.rows,
            "podsCounted": len(state.pods),
            "ghostPods": sum(len(pods) for pods in state.ghosts.values()),
            "podGroups": len(state.group_ids),
            "labelValues": sum(len(ids) for ids in state.label_value_ids.values()),
            "assumed": len(self._assumed),
            "deferred": len(self._deferred),
        }

    def add_node(self, node: Object) -> None:
        self._do(lambda: self._add_node(node))

    update_node = add_node

    def _add_node(self, node: Object) -> None:
        # Pods bound to it before it (re)appeared are the state's ghosts: they count now.
        self.state.add_node(node)

    def remove_node(self, name: str) -> None:
        # The state keeps its pods as ghosts (counted nowhere) until their own DELETED
        # events come from the watch or the node returns, as kube-scheduler's cache does.
        self._do(lambda: self.state.remove_node(name))

    def set_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        self._do(lambda: self.state.set_namespace(name, labels))

    def remove_namespace(self, name: str) -> None:
        self._do(lambda: self.state.namespace_labels.pop(name, None))

    def bound_pod(self, pod: Object) -> None:
        """The watch shows a pod with ``spec.nodeName`` (added, changed or confirmed)."""
        self.bound(pod_key(pod), pod["spec"]["nodeName"], _finished(pod), lambda: pod)

    def seen_bound(self, old: Pod | None, pod: Pod) -> None:
        """The watch shows the informer object ``pod`` on a node (``old``: the version seen
        before, if any). An update that changes nothing the state counts of a pod already on
        its node is skipped (``same_for_state``: most are status reports), and the API dict
        is made only when the state counts the pod anew (see ``bound``)."""
        if old is not None and old.spec.node_name and same_for_state(old, pod):
            return
        self.bound(
            struct_key(pod),
            pod.spec.node_name,
            pod.status.phase in FINISHED_PHASES,
            lambda: self._api(pod),
        )

    def bound(self, key: str, node: str, finished: bool, pod: Callable[[], Object]) -> None:
        """The watch shows pod ``key`` on ``node``; ``pod`` gives its API dict, asked for
        only when the state counts the pod anew: confirming our own binding needs none (a
        burst's 10,000 confirmations converted 10,000 pods for nothing)."""
        self._do(lambda: self._bound(key, node, finished, pod))

    def _bound(self, key: str, node: str, finished: bool, pod: Callable[[], Object]) -> None:
        assumed = self._assumed.pop(key, None)
        if finished:
            self.state.remove_pod_key(key)
            return
        record = self.state.pod_record(key)
        if assumed is not None and assumed.node == node and record is not None:
            # Our own binding: counted already (from the same object), now as bound.
            record.assumed = False
            return
        self.state.add_pod(pod())  # a pod of a node not seen yet is kept as its ghost

    def remove_pod(self, pod: Object) -> None:
        """The watch shows the pod deleted."""
        self.removed(pod_key(pod))

    def removed(self, key: str) -> None:
        """The watch shows pod ``key`` (``struct_key`` of the informer's object) deleted:
        no API dict needed."""
        self._do(lambda: self._remove_pod(key))

    def _remove_pod(self, key: str) -> None:
        self._assumed.pop(key, None)
        self.state.remove_pod_key(key)

    def run_unfrozen(self, change: Callable[[], object]) -> None:
        """Run ``change`` now, or once the running burst is done."""
        self._do(change)

    def put_storage(self, kind: str, obj: Object) -> None:
        """A storage object (core/volumes.py KINDS) was added or changed."""
        self._do(lambda: self.state.storage.put(kind, obj))

    def delete_storage(self, kind: str, obj: Object) -> None:
        self._do(lambda: self.state.storage.delete(kind, obj))

    # --- the cycle and the binder -----------------------------------------------------

    def assumed(self, key: str, node: str) -> None:
        """The burst placed (and committed) pod ``key`` on ``node``; its bind is starting.

        Called from the event loop right after the burst, so the state already counts it.
        """
        self._assumed[key] = Assumed(node)

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed

    def assumed_node(self, key: str) -> str | None:
        entry = self._assumed.get(key)
        return entry.node if entry is not None else None

    @property
    def assumed_count(self) -> int:
        return len(self._assumed)

    def finish_binding(self, key: str) -> None:
        """The bind call succeeded; the watch should confirm it within ``assumed_ttl``."""
        entry = self._assumed.get(key)
        if entry is not None:
            entry.deadline = self._clock() + self.assumed_ttl
            heapq.heappush(self._deadlines, (entry.deadline, key))

    def forget(self, key: str) -> None:
        """The bind failed or is moot: undo the assumption (never a confirmed pod)."""
        self._do(lambda: self._forget(key))

    def _forget(self, key: str) -> None:
        entry = self._assumed.pop(key, None)
        record = self.state.pod_record(key)
        if entry is not None and record is not None and record.assumed:
            self.state.remove_pod_key(key)

    def drop_unrecorded(self, keys: list[str]) -> None:
        """Undo placements a failed burst committed to the state but never recorded as
        assumed (the kernel's commit was cut short), so no capacity leaks."""

        def drop() -> None:
            for key in keys:
                record = self.state.pod_record(key)
                if record is not None and record.assumed and key not in self._assumed:
                    self.state.remove_pod_key(key)

        self._do(drop)

    def expire(self) -> int:
        """Forget assumed pods whose bind finished ``assumed_ttl`` ago without a
        confirmation; returns how many."""
        now = self._clock()
        stale = []
        deadlines = self._deadlines
        while deadlines and deadlines[0][0] <= now:
            deadline, key = heapq.heappop(deadlines)
            entry = self._assumed.get(key)
            if entry is not None and entry.deadline == deadline:
                stale.append(key)
        stale = list(dict.fromkeys(stale))  # a key pushed twice with one deadline
        for key in stale:
            log.warning("assumed pod %s expired: its binding was never seen", key)
            self.forget(key)
        self.expired += len(stale)
        return len(stale)
