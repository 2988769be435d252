"""The extender's node-state matrices: one ClusterState, fed by informers and by requests.

* With API server credentials, the node and pod informers (the scheduler's own, see
  ``kubesalvo.sched.informers``) keep a ``SchedulerCache`` equal to the cluster: nodes are
  rows, bound pods count on their row. This is what ``nodeCacheCapable: true`` requests
  (node names only) are answered from.
* ``nodeCacheCapable: false`` requests carry full Node objects: each node whose
  resourceVersion the state has not applied yet is written into the same state (so its
  labels, allocatable and annotations are the ones kube-scheduler decided on), and its
  row answers. A node only ever seen in requests, never in the watch, is dropped after
  ``REQUEST_NODE_TTL`` seconds without a request naming it (without credentials that is
  the only way nodes leave).
* The extender's own binds are assumed in the cache at once (the watch confirms them),
  so the next request already counts the pod.

Every change is passed on to the agents' hooks, in the order the watch produced it.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterable, Sequence

import msgspec
import numpy as np
import numpy.typing as npt

from kubesalvo.core.state import ClusterState, pod_key
from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.extender.agent import Agent, Clock
from kubesalvo.sched.extender.wire import BadRequest, node_head
from kubesalvo.sched.informers import ADDED, DELETED, SYNCED, Change, to_api_dict
from kubesalvo.sched.informers.models import Node, Pod

__all__ = ["REQUEST_NODE_TTL", "NodeFeed"]

log = logging.getLogger(__name__)

REQUEST_NODE_TTL = 600.0
_node_decoder = msgspec.json.Decoder(Node)


class NodeFeed:
    """ClusterState plus the agents that watch it change."""

    def __init__(self, agents: Sequence[Agent], clock: Clock = time.monotonic) -> None:
        self.cache = SchedulerCache()
        self.agents = list(agents)
        self.clock = clock
        self._versions: dict[str, str] = {}  # node name -> resourceVersion in the state
        self._watched: set[str] = set()  # nodes the informer knows
        self._requested: dict[str, float] = {}  # request-only nodes -> last seen
        self.pods_synced = False
        # Bumped whenever a name gets a row or loses one (a dropped node's row is reused
        # by the next new node): rows looked up before are stale once it moves.
        self.layout = 0

    @property
    def state(self) -> ClusterState:
        return self.cache.state

    # --- nodes ------------------------------------------------------------------------

    def put_node(self, node: Node) -> int:
        """Write a node into the state (added or changed) and tell the agents."""
        name = node.metadata.name
        if name not in self.state.row_of:
            self.layout += 1  # before: a node that fails halfway may still have its row
        self.cache.add_node(to_api_dict(node))
        self._versions[name] = node.metadata.resource_version
        row = self.state.row_of[name]
        for agent in self.agents:
            agent.on_node(self.state, row, node)
        return row

    def drop_node(self, name: str) -> None:
        row = self.state.row_of.get(name)
        self._versions.pop(name, None)
        self._requested.pop(name, None)
        if row is None:
            return
        for agent in self.agents:  # before the row is cleared: hooks may read its name
            agent.on_node_removed(self.state, row)
        self.cache.remove_node(name)
        self.layout += 1

    def on_node_change(self, change: Change[Node]) -> None:
        """The node informer's handler."""
        node = change.obj
        if node is None:
            return
        name = node.metadata.name
        if change.type == DELETED:
            self._watched.discard(name)
            self.drop_node(name)
            return
        self._watched.add(name)
        self._requested.pop(name, None)
        if self._versions.get(name) != node.metadata.resource_version:
            self.put_node(node)

    def request_rows(self, raws: Iterable[msgspec.Raw]) -> tuple[list[str], npt.NDArray[np.intp]]:
        """Names and rows of a request's full nodes, writing the changed ones into the
        state first. ``BadRequest`` for a node that is not a Node."""
        names: list[str] = []
        rows: list[int] = []
        now = self.clock()
        for raw in raws:
            head = node_head(raw)
            name = head.name
            if not name:
                raise BadRequest("invalid node in Nodes.items: metadata.name is required")
            row = self.state.row_of.get(name)
            if row is None or self._versions.get(name) != head.resource_version:
                try:
                    node = _node_decoder.decode(raw)
                except (msgspec.ValidationError, msgspec.DecodeError) as error:
                    raise BadRequest(f"invalid node {name!r} in Nodes.items: {error}") from None
                try:
                    row = self.put_node(node)
                except (ValueError, ArithmeticError) as error:
                    raise BadRequest(f"invalid node {name!r} in Nodes.items: {error}") from None
            if name not in self._watched:
                self._requested[name] = now
            names.append(name)
            rows.append(row)
        return names, np.asarray(rows, dtype=np.intp)

    def rows_of(self, names: Sequence[str]) -> npt.NDArray[np.intp]:
        """Rows of the named nodes, -1 for names the state does not know."""
        # map over the dict's own get (no Python frame per name): the bulk of a
        # names-only request at thousands of nodes
        lookup = map(self.state.row_of.get, names, itertools.repeat(-1))
        return np.fromiter(lookup, np.intp, len(names))

    def sweep(self) -> int:
        """Drop request-only nodes not named for ``REQUEST_NODE_TTL`` seconds."""
        limit = self.clock() - REQUEST_NODE_TTL
        stale = [name for name, seen in self._requested.items() if seen < limit]
        for name in stale:
            log.info("node %s was named by no request for %.0fs: dropped", name, REQUEST_NODE_TTL)
            self.drop_node(name)
        return len(stale)

    # --- pods -------------------------------------------------------------------------

    def on_pod_change(self, change: Change[Pod]) -> None:
        """The pod informer's handler (pods of every phase but finished ones)."""
        if change.type == SYNCED:
            self.pods_synced = True
            return
        pod = change.obj
        if pod is None:
            return
        live = self.pods_synced
        if change.type == DELETED:
            api = to_api_dict(pod)
            if pod.spec.node_name or self.cache.is_assumed(pod_key(api)):
                self.cache.remove_pod(api)
            for agent in self.agents:
                agent.on_pod(self.state, pod, None, live)
            return
        old = change.old if change.type != ADDED else None
        if pod.spec.node_name:
            self.cache.seen_bound(old, pod)
        for agent in self.agents:
            agent.on_pod(self.state, old, pod, live)

    def bound(self, pod: Pod | None, uid: str, node: str) -> None:
        """The bind verb bound a pod: count it now (``pod`` is its pending object when the
        informer has it), the watch confirms it later."""
        row = self.state.row_of.get(node)
        if row is None:
            return
        if pod is not None:
            api = to_api_dict(pod)
            key = pod_key(api)
            if not self.cache.is_assumed(key):
                self.state.assume_pod(api, node)
                self.cache.assumed(key, node)
                self.cache.finish_binding(key)
        now = self.clock()
        for agent in self.agents:
            agent.on_bound(self.state, row, uid, now)
