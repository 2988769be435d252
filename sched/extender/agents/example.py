"""``example``: the template for a new agent - copy this file, rename, change the four parts.

It filters out nodes labelled ``<avoidLabel>=true`` (an operator's "keep new pods off
this node" switch) and scores nodes by the share of their pod slots still free. Both
are computed for every row of the ClusterState at once: a label column compared to one
value id, and two columns of the resource matrices divided. See README "Writing an
agent" for the five things an agent writes and tests/sched/extender/test_example_agent.py
for the test to copy.
"""

from __future__ import annotations

import time

import msgspec
import numpy as np
import numpy.typing as npt

from kubesalvo.core.state import POD_COLUMN, ClusterState
from kubesalvo.sched.extender.agent import Agent, Clock, Filtered, PodInfo

# 1. The name the configuration enables it by (and its URL prefix: /example/filter).
NAME = "example"
# Failure texts are constants: kube-scheduler shows them in FailedScheduling events.
REASON_AVOIDED = "node is marked to be avoided by new pods"


# 2. Typed arguments with defaults and validation; unknown fields are refused.
class ExampleArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    avoid_label: str = "example.kubesalvo.io/avoid"

    def __post_init__(self) -> None:
        if not self.avoid_label:
            raise ValueError("avoidLabel must not be empty")


class Example(Agent):
    name = NAME
    Args = ExampleArgs

    def __init__(self, args: ExampleArgs, clock: Clock = time.monotonic) -> None:
        super().__init__(args, clock)

    # 3. The filter: a reason code per row (0 passes). A node label cannot change by
    # preempting pods, so the failure is unresolvable.
    def filter(self, state: ClusterState, pod: PodInfo) -> Filtered:
        codes = np.zeros(state.rows, dtype=np.uint8)
        column = state.label_columns.get(self.args.avoid_label)
        value_id = state.label_value_ids.get(self.args.avoid_label, {}).get("true")
        if column is not None and value_id is not None:
            codes[column[: state.rows] == value_id] = 1
        return Filtered(codes, (REASON_AVOIDED,), unresolvable=frozenset({1}))

    # 4. The score: one float in [0, 1] per row, higher is better.
    def score(self, state: ClusterState, pod: PodInfo) -> npt.NDArray[np.float64]:
        rows = state.rows
        slots = state.allocatable[:rows, POD_COLUMN].astype(np.float64)
        used = state.requested[:rows, POD_COLUMN].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            free = np.where(slots > 0, (slots - used) / slots, 0.0)
        result: npt.NDArray[np.float64] = np.clip(free, 0.0, 1.0)
        return result

    # 5. The feed: this agent reads only the state's own matrices, so it needs none of
    # the hooks (on_node, on_node_removed, on_pod, on_bound); see congestion.py for one
    # that keeps per-row arrays of its own.
