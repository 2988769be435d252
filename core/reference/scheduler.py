"""ReferenceScheduler: kube-scheduler v1.34's cycle for whole bursts, plainly written (the oracle).

Filter and score are the per-node evaluator's (core/pernode/evaluator.py, kube-scheduler's
plugins written one pod and one node at a time); this adds what only the tests need:

4. Select: any node with the highest total (kube-scheduler picks one at random).

``place_burst`` places pods in order, assuming each placement before the next pod,
and handles gangs (see core/plugins/coscheduling/gang.py) all-or-nothing: when it meets
the first pod of a group it places all of the group's pods of the burst, in their order,
one after the other; if fewer than the group's minimum fit, it takes them all back before going on.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core.pernode.evaluator import FilterOutcome, PodEvaluator
from kubesalvo.core.pernode.framework import Pod, SchedulingError
from kubesalvo.core.pernode.snapshot import namespace_of, pod_key
from kubesalvo.core.plugins import coscheduling, framework
from kubesalvo.core.plugins.coscheduling import gang

__all__ = ["FilterOutcome", "ReferenceScheduler", "ScheduleResult"]


@dataclass(frozen=True)
class ScheduleResult:
    """Where a pod went (or why not), with everything a kernel's answer is checked against."""

    pod: str  # namespace/name
    node: str | None
    score: int | None  # the chosen node's total weighted score
    best_nodes: frozenset[str]  # every node with the highest total: all equally right
    reason_counts: dict[str, int] = field(default_factory=dict)
    message: str = (
        ""  # "Successfully assigned ..." or the FailedScheduling text (no PostFilter part)
    )
    group: gang.GroupKey | None = None
    rolled_back: bool = False  # fitted, but its gang did not reach its minimum
    error: bool = False  # a plugin failed the attempt (SchedulingError): message is its text


class ReferenceScheduler(PodEvaluator):
    """The oracle: filter, score and place pods against dict nodes and pods.

    ``nodes``, ``pods`` (bound ones carry ``spec.nodeName``), ``namespaces`` (for
    namespace selectors) and ``workloads`` (Services, ReplicationControllers,
    ReplicaSets, StatefulSets: the selectors of default spread constraints) are API
    JSON objects. The scheduler keeps its own state; ``assume`` and ``place_burst``
    change it. Filters and scores are the production per-node evaluator's
    (core/pernode); this class adds what only the tests need: choosing a node and
    placing whole bursts, gangs included, to compare with the kernel's placements.
    """

    # --- placing ---------------------------------------------------------------------

    def schedule(self, pod: Pod) -> ScheduleResult:
        """Where ``pod`` would go now; the state is not changed.

        kube-scheduler skips scoring when a single node is feasible; the reference
        still reports that node's score, which does not change the choice (and none
        when a plugin's PreScore would have failed: upstream never runs it then).
        A plugin failing the attempt with an error (an invalid selector in the pod's
        spread constraints, say) gives no node, ``error`` set and its text as message; so
        does a snapshot without any node (kube-scheduler's "no nodes available").
        """
        if not self.snapshot.nodes:
            return self._error(pod, SchedulingError(framework.ERR_NO_NODES_AVAILABLE))
        try:
            outcome = self.evaluate(pod)
        except SchedulingError as err:
            return self._error(pod, err)
        feasible = outcome.feasible
        if not feasible:
            counts = outcome.reason_counts()
            message = framework.fit_error_message(
                len(self.snapshot.nodes), counts, prefilter_message=outcome.prefilter_message
            )
            return ScheduleResult(
                pod_key(pod), None, None, frozenset(), counts, message, gang.group_of(pod)
            )
        try:
            scores = self.scores_for(pod, feasible)
        except SchedulingError as err:
            if len(feasible) > 1:
                return self._error(pod, err)
            scores = None
        best: int | None = None
        best_nodes = frozenset(feasible)
        if scores is not None:
            totals = {name: sum(plugins.values()) for name, plugins in scores.items()}
            best = max(totals.values())
            best_nodes = frozenset(name for name, total in totals.items() if total == best)
        chosen = next(name for name in feasible if name in best_nodes)
        name = (pod.get("metadata") or {}).get("name", "")
        message = framework.success_message(namespace_of(pod), name, chosen)
        return ScheduleResult(
            pod_key(pod), chosen, best, best_nodes, {}, message, gang.group_of(pod)
        )

    @staticmethod
    def _error(pod: Pod, err: SchedulingError) -> ScheduleResult:
        return ScheduleResult(
            pod_key(pod), None, None, frozenset(), {}, err.message, gang.group_of(pod), error=True
        )

    def assume(self, pod: Pod, node_name: str) -> Pod:
        """Place ``pod`` on ``node_name`` in the state; returns the pod as bound there."""
        bound: dict[str, Any] = copy.deepcopy(dict(pod))
        bound.setdefault("spec", {})["nodeName"] = node_name
        self.snapshot.by_name[node_name].add_pod(bound)
        return bound

    def forget(self, bound: Pod) -> None:
        """Take back a pod returned by ``assume``."""
        self.snapshot.by_name[bound["spec"]["nodeName"]].remove_pod(bound)

    def place_burst(self, pods: Iterable[Pod], choose: Any = None) -> list[ScheduleResult]:
        """Place ``pods`` in order, each seeing the ones before; gangs all-or-nothing.

        ``choose(result) -> node name`` picks among ``result.best_nodes`` (default: the
        first in node order), so a test can replay a kernel's tie-breaks.
        Results come back in the order of ``pods``.
        """
        queue = list(pods)
        minimums = gang.group_minimums(queue)
        refused = gang.malformed_groups(queue)
        results: dict[int, ScheduleResult] = {}
        done: set[gang.GroupKey] = set()
        for index, pod in enumerate(queue):
            if index in results:
                continue
            key = gang.group_of(pod)
            if key is None:
                results[index] = self._place_one(pod, choose)[0]
                continue
            if key in done:
                continue
            done.add(key)
            members = [i for i, p in enumerate(queue) if gang.group_of(p) == key]
            if key in refused:  # Coscheduling's PreFilter does not try them
                total = len(self.snapshot.nodes)
                message = framework.fit_error_message(total, {}, prefilter_message=refused[key])
                for i in members:
                    results[i] = ScheduleResult(
                        pod_key(queue[i]),
                        None,
                        None,
                        frozenset(),
                        {refused[key]: total},
                        message,
                        key,
                    )
                continue
            results.update(
                self._place_gang(key, [(i, queue[i]) for i in members], minimums[key], choose)
            )
        return [results[i] for i in range(len(queue))]

    def _place_one(self, pod: Pod, choose: Any) -> tuple[ScheduleResult, Pod | None]:
        result = self.schedule(pod)
        if result.node is None:
            return result, None
        node = choose(result) if choose is not None else result.node
        if node not in result.best_nodes:
            raise ValueError(f"{node!r} is not among the best nodes {sorted(result.best_nodes)}")
        if node != result.node:
            name = (pod.get("metadata") or {}).get("name", "")
            result = ScheduleResult(
                result.pod,
                node,
                result.score,
                result.best_nodes,
                {},
                framework.success_message(namespace_of(pod), name, node),
                result.group,
            )
        return result, self.assume(pod, node)

    def _place_gang(
        self, key: gang.GroupKey, members: list[tuple[int, Pod]], minimum: int, choose: Any
    ) -> dict[int, ScheduleResult]:
        placed: list[tuple[int, ScheduleResult, Pod]] = []
        results: dict[int, ScheduleResult] = {}
        for index, pod in members:
            result, bound = self._place_one(pod, choose)
            results[index] = result
            if bound is not None:
                placed.append((index, result, bound))
        if len(placed) >= minimum:
            return results
        for _, _, bound in reversed(placed):
            self.forget(bound)
        reason = coscheduling.gang_reason(str(key), len(placed), minimum)
        total = len(self.snapshot.nodes)
        for index, result, _ in placed:
            results[index] = ScheduleResult(
                result.pod,
                None,
                None,
                frozenset(),
                {},
                framework.fit_error_message(total, {}, prefilter_message=reason),
                key,
                rolled_back=True,
            )
        return results
