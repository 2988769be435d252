"""Answering one request from several agents: filters ANDed, scores weighted, victims kept.

The nodes of a request are rows of the feed's ClusterState (-1: a node the state does
not know). Each agent interested in the pod (all of them, or those whose
``managedResources`` the pod names) answers over every row; this module picks the
request's rows out of those arrays:

* filter: a node fails with the first failing agent's reason (``"<agent>: <reason>"``),
  as unresolvable when that agent says preemption cannot fix it; an unknown node fails
  unresolvable. An agent that raises makes the whole answer an error (``Error``).
* prioritize: ``round(10 x sum(weight x score) / sum(weight))`` over the agents that
  scored the pod, 0 for unknown nodes. An agent that raises is left out of the sum and
  logged (kube-scheduler would drop the whole extender's scores for an error).
* preempt: a candidate node is kept, with kube-scheduler's victims, unless it is unknown
  or an agent fails it as unresolvable (removing pods would not help there).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesalvo.core.state import ClusterState
from kubesalvo.sched.extender.agent import PodInfo
from kubesalvo.sched.extender.config import ConfiguredAgent
from kubesalvo.sched.extender.wire import MAX_EXTENDER_PRIORITY

__all__ = ["AgentFailure", "FilterAnswer", "filter_nodes", "interested", "preempt", "prioritize"]

log = logging.getLogger(__name__)

UNKNOWN_NODE = "node is not known to the extender's node cache (not seen by its watch yet)"
Rows = npt.NDArray[np.intp]


class AgentFailure(RuntimeError):
    """An agent raised while answering; the text names it and says what went wrong."""


@dataclass
class FilterAnswer:
    """Positions, in the request's order, of the nodes that pass and of those that fail;
    a failing node's text is ``texts[text_of[i]]``, in ``FailedNodes`` when ``resolvable[i]``
    (preemption may help) and in ``FailedAndUnresolvableNodes`` otherwise."""

    passed: Rows
    failing: Rows
    text_of: Rows
    resolvable: npt.NDArray[np.bool_]
    texts: list[str]


def interested(agents: Sequence[ConfiguredAgent], pod: PodInfo) -> list[ConfiguredAgent]:
    """The agents that act on this pod (kube-scheduler's ``managedResources`` rule)."""
    return [
        entry
        for entry in agents
        if not entry.managed_resources or pod.requests_any(entry.managed_resources)
    ]


def filter_nodes(
    agents: Sequence[ConfiguredAgent],
    state: ClusterState,
    pod: PodInfo,
    rows: Rows,
) -> FilterAnswer:
    """Which of the request's nodes (their ``rows``, in the request's order) pass."""
    unknown = rows < 0
    known_rows = rows[~unknown]
    # 0 passes, else reasons[i - 1]; per known node while agents answer, then per node
    reason_known = np.zeros(len(known_rows), dtype=np.int32)
    reasons: list[str] = []
    hard: set[int] = set()
    for entry in interested(agents, pod):
        try:
            verdict = entry.agent.filter(state, pod)
            codes = verdict.codes[known_rows]
        except Exception as error:
            log.exception("agent %s failed to filter", entry.name)
            raise AgentFailure(f"agent {entry.name} failed: {error}") from error
        fresh = (codes > 0) & (reason_known == 0)
        if not fresh.any():
            continue
        offset = len(reasons)
        reasons.extend(f"{entry.name}: {text}" for text in verdict.reasons)
        hard.update(offset + code for code in verdict.unresolvable)
        reason_known[fresh] = offset + codes[fresh].astype(np.int32)
    reason_of = np.zeros(len(rows), dtype=np.int32)
    reason_of[~unknown] = reason_known
    failing = np.nonzero(unknown | (reason_of > 0))[0]
    text_of = np.where(unknown[failing], 0, reason_of[failing]).astype(np.intp)
    texts = [UNKNOWN_NODE, *reasons]
    soft = np.array([code not in hard for code in range(len(texts))])
    soft[0] = False
    passed = np.nonzero(~unknown & (reason_of == 0))[0]
    return FilterAnswer(passed, failing, text_of, soft[text_of], texts)


def prioritize(
    agents: Sequence[ConfiguredAgent], state: ClusterState, pod: PodInfo, rows: Rows
) -> Rows:
    """The score of each of the request's nodes, 0..``MAX_EXTENDER_PRIORITY``."""
    known = rows >= 0
    total = np.zeros(len(rows), dtype=np.float64)
    weights = 0
    for entry in interested(agents, pod):
        if entry.weight == 0:
            continue
        try:
            scores = entry.agent.score(state, pod)
        except Exception:
            log.exception("agent %s failed to score: left out of the scores", entry.name)
            continue
        if scores is None:
            continue
        picked = np.zeros(len(rows), dtype=np.float64)
        picked[known] = scores[rows[known]]
        # clip(nan_to_num(x), 0, 1) in two ufuncs: fmax sends NaN and -inf to 0
        total += entry.weight * np.minimum(np.fmax(picked, 0.0), 1.0)
        weights += entry.weight
    if weights == 0:
        return np.zeros(len(rows), dtype=np.intp)
    return np.rint(total * (MAX_EXTENDER_PRIORITY / weights)).astype(np.intp)


def preempt(
    agents: Sequence[ConfiguredAgent],
    state: ClusterState,
    pod: PodInfo,
    names: Sequence[str],
    rows: Rows,
) -> list[int]:
    """Positions of the candidate nodes that preemption can help."""
    keep = rows >= 0
    known = np.nonzero(keep)[0]
    for entry in interested(agents, pod):
        try:
            verdict = entry.agent.filter(state, pod)
        except Exception:
            log.exception("agent %s failed to filter for preemption: ignored", entry.name)
            continue
        if not verdict.unresolvable:
            continue
        codes = verdict.codes[rows[known]]
        hard = np.isin(codes, np.fromiter(verdict.unresolvable, np.uint8))
        keep[known[hard]] = False
    result: list[int] = np.nonzero(keep)[0].tolist()
    return result
