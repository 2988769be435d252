"""``congestion``: keep a burst off nodes that are busy starting pods right now.

A node's congestion is ``startingWeight`` x (pods bound to it and not Running yet) plus
``churnWeight`` x (pods bound to it or deleted from it recently), each event fading with
``halfLifeSeconds`` (a pod stuck starting for a long time stops counting, as does old
churn). Nodes above ``threshold`` are filtered (a resolvable failure: the congestion
passes by itself); every node is scored ``1 / (1 + congestion)``.

Everything comes from the pod watch and from the extender's own binds (counted at once,
before the watch shows them), never from the pods kube-scheduler happens to send: with
``managedResources`` it sends only some of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import msgspec
import numpy as np
import numpy.typing as npt

from kubesalvo.core.state import ClusterState
from kubesalvo.sched.extender.agent import Agent, Clock, Filtered, PodInfo
from kubesalvo.sched.extender.agents.decay import DecayingSums
from kubesalvo.sched.informers.models import Pod

NAME = "congestion"
REASON_CONGESTED = "node is congested: too many pods bound recently and not running yet"


class CongestionArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    half_life_seconds: float = 30.0
    # Congestion above which a node is filtered; 0 turns the filter off (scores only).
    threshold: float = 8.0
    starting_weight: float = 1.0
    churn_weight: float = 0.5

    def __post_init__(self) -> None:
        if self.half_life_seconds <= 0:
            raise ValueError("halfLifeSeconds must be > 0")
        if self.threshold < 0 or self.starting_weight < 0 or self.churn_weight < 0:
            raise ValueError("threshold, startingWeight and churnWeight must be >= 0")


@dataclass
class _Starting:
    node: str
    at: float


def _finished(phase: str) -> bool:
    return phase in ("Succeeded", "Failed")


class Congestion(Agent):
    name = NAME
    Args = CongestionArgs

    def __init__(self, args: CongestionArgs, clock: Clock = time.monotonic) -> None:
        super().__init__(args, clock)
        now = self.clock()
        self.starting = DecayingSums(args.half_life_seconds, now)
        self.churn = DecayingSums(args.half_life_seconds, now)
        self._starting: dict[str, _Starting] = {}
        # Pods whose binding was counted as churn (by the bind verb or the watch): uid -> node.
        self._bound: dict[str, str] = {}

    def congestion(self, state: ClusterState, now: float) -> npt.NDArray[np.float64]:
        rows = state.rows
        return self.args.starting_weight * self.starting.values(
            rows, now
        ) + self.args.churn_weight * self.churn.values(rows, now)

    def filter(self, state: ClusterState, pod: PodInfo) -> Filtered:
        codes = np.zeros(state.rows, dtype=np.uint8)
        if self.args.threshold > 0:
            codes[self.congestion(state, self.clock()) > self.args.threshold] = 1
        return Filtered(codes, (REASON_CONGESTED,))

    def score(self, state: ClusterState, pod: PodInfo) -> npt.NDArray[np.float64]:
        result: npt.NDArray[np.float64] = 1.0 / (1.0 + self.congestion(state, self.clock()))
        return result

    # --- the feed ---------------------------------------------------------------------

    def on_node_removed(self, state: ClusterState, row: int) -> None:
        self.starting.reset(row)
        self.churn.reset(row)

    def _churn(self, state: ClusterState, node: str, at: float) -> None:
        row = state.row_of.get(node)
        if row is not None:
            self.churn.add(row, at)

    def _start(self, state: ClusterState, uid: str, node: str, at: float) -> None:
        if uid in self._starting:
            return
        row = state.row_of.get(node)
        if row is not None:
            self.starting.add(row, at)
            self._starting[uid] = _Starting(node, at)

    def _started(self, state: ClusterState, uid: str) -> None:
        entry = self._starting.pop(uid, None)
        if entry is not None:
            row = state.row_of.get(entry.node)
            if row is not None:
                self.starting.add(row, entry.at, sign=-1)

    def on_bound(self, state: ClusterState, row: int, uid: str, at: float) -> None:
        node = state.names[row]
        if node is None or uid in self._bound:
            return
        self._bound[uid] = node
        self.churn.add(row, at)
        self._start(state, uid, node, at)

    def on_pod(self, state: ClusterState, old: Pod | None, new: Pod | None, live: bool) -> None:
        pod = new if new is not None else old
        if pod is None:
            return
        uid = pod.metadata.uid
        now = self.clock()
        if new is None or _finished(new.status.phase):
            self._started(state, uid)
            node = self._bound.pop(uid, None) or pod.spec.node_name
            if node and live and new is None:
                self._churn(state, node, now)
            return
        node = new.spec.node_name
        if not node:
            return
        if uid not in self._bound:
            self._bound[uid] = node
            if live:  # the first list shows old bindings: they are not churn
                self._churn(state, node, now)
        if new.status.phase == "Running":
            self._started(state, uid)
        else:
            self._start(state, uid, node, now)
