"""ReferenceScheduler: kube-scheduler v1.34's filter, score and select, plainly written.

One scheduling cycle for a pod, as the framework runs it:

1. PreFilter: each filter plugin reads the pod and the whole snapshot. NodeAffinity
   may narrow the nodes to those its required terms pin by name (the others get
   "node(s) didn't satisfy plugin(s) [NodeAffinity]") or reject the pod outright.
2. Filter: each remaining node goes through the profile's filters in order; its
   reasons are those of the first filter that rejects it.
3. Score: each score plugin scores the feasible nodes, normalises to 0..100, and is
   multiplied by its weight; a node's total is the sum.
4. Select: any node with the highest total (kube-scheduler picks one at random).

``place_burst`` places pods in order, assuming each placement before the next pod,
and handles gangs (see core/gang.py) all-or-nothing: when it meets the first pod of a
group it places all of the group's pods of the burst, in their order, one after the
other; if fewer than the group's minimum fit, it takes them all back before going on.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from kubesalvo.core import gang
from kubesalvo.core.plugins import coscheduling, framework, names, registry
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import (
    balanced_allocation,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_resources_fit,
    pod_topology_spread,
    taint_toleration,
)
from kubesalvo.core.reference.framework import (
    FilterPlugin,
    Pod,
    PodInvalid,
    PreFilterRejection,
    SchedulingError,
    Status,
)
from kubesalvo.core.reference.inter_pod_affinity import InterPodAffinity
from kubesalvo.core.reference.node_affinity import NodeAffinity
from kubesalvo.core.reference.node_name import NodeName
from kubesalvo.core.reference.node_ports import NodePorts
from kubesalvo.core.reference.node_resources_fit import NodeResourcesFit
from kubesalvo.core.reference.node_unschedulable import NodeUnschedulable
from kubesalvo.core.reference.pod_topology_spread import PodTopologySpread
from kubesalvo.core.reference.snapshot import NodeInfo, Snapshot, namespace_of, pod_key
from kubesalvo.core.reference.static_plugins import StaticFilter, static_scores
from kubesalvo.core.reference.taint_toleration import TaintToleration
from kubesalvo.core.reference.volumes import check_in_scope, volume_filter
from kubesalvo.core.volumes import StorageObjects

__all__ = ["FilterOutcome", "ReferenceScheduler", "ScheduleResult"]

# The volume filters (core/reference/volumes.py: they read ``storage``).
_VOLUME_FILTERS = frozenset(
    {
        names.VOLUME_RESTRICTIONS,
        names.NODE_VOLUME_LIMITS,
        names.VOLUME_BINDING,
        names.VOLUME_ZONE,
    }
)


@dataclass(frozen=True)
class FilterOutcome:
    """Per-node filter statuses of one pod (None: feasible) and a PreFilter rejection."""

    statuses: dict[str, Status | None]
    prefilter_message: str = ""

    @property
    def feasible(self) -> list[str]:
        return [name for name, status in self.statuses.items() if status is None]

    def reason_counts(self) -> dict[str, int]:
        """How many nodes gave each reason (what the FailedScheduling message counts)."""
        counts: Counter[str] = Counter()
        for status in self.statuses.values():
            if status is not None:
                counts.update(status.reasons)
        return dict(counts)


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


class ReferenceScheduler:
    """The oracle: filter, score and place pods against dict nodes and pods.

    ``nodes``, ``pods`` (bound ones carry ``spec.nodeName``), ``namespaces`` (for
    namespace selectors) and ``workloads`` (Services, ReplicationControllers,
    ReplicaSets, StatefulSets: the selectors of default spread constraints) are API
    JSON objects. The scheduler keeps its own state; ``assume`` and ``place_burst``
    change it.
    """

    def __init__(
        self,
        nodes: Iterable[Mapping[str, Any]],
        pods: Iterable[Mapping[str, Any]] = (),
        namespaces: Iterable[Mapping[str, Any]] = (),
        profile: Profile | None = None,
        workloads: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        self.profile = profile or Profile.default()
        self.snapshot = Snapshot.build(nodes, pods, namespaces, workloads)
        # PVCs, PVs, classes and CSI objects the volume filters read (set by the caller)
        self.storage = StorageObjects()

    @classmethod
    def from_snapshot(
        cls, snapshot: Snapshot, profile: Profile | None = None
    ) -> ReferenceScheduler:
        """A scheduler over a ready snapshot (say ``Cache.snapshot()`` after a history of
        node and pod events, where the order of events decides image sizes)."""
        ref = cls((), profile=profile)
        ref.snapshot = snapshot
        return ref

    # --- filters ---------------------------------------------------------------------

    def _filter_plugin(self, name: str, pod: Pod) -> FilterPlugin | None:
        """The named filter for this pod's cycle (its constructor is the PreFilter)."""
        if name == names.NODE_UNSCHEDULABLE:
            return NodeUnschedulable(pod)
        if name == names.NODE_NAME:
            return NodeName(pod)
        if name == names.TAINT_TOLERATION:
            return TaintToleration(pod)
        if name == names.NODE_AFFINITY:
            return NodeAffinity(pod, self.profile.node_affinity.added_affinity)
        if name == names.NODE_PORTS:
            return NodePorts(pod)
        if name == names.NODE_RESOURCES_FIT:
            return NodeResourcesFit(pod, self.profile.fit)
        if name == names.POD_TOPOLOGY_SPREAD:
            return PodTopologySpread(pod, self.snapshot, self.profile.spread)
        if name == names.INTER_POD_AFFINITY:
            return InterPodAffinity(pod, self.snapshot)
        if name in _VOLUME_FILTERS:
            return cast(FilterPlugin | None, volume_filter(name, pod, self.storage, self.snapshot))
        if name == names.DYNAMIC_RESOURCES:
            return None  # admits every node for the pods in scope (see volumes.py)
        spec = registry.PLUGINS.get(name)
        if spec is not None and spec.static_filter is not None:
            return StaticFilter(spec, self.profile.args_of(name), pod, self.snapshot.nodes)
        raise PodInvalid(f"the reference has no filter {name}")

    def evaluate(self, pod: Pod) -> FilterOutcome:
        """Run PreFilter and Filter for ``pod`` on every node."""
        check_in_scope(pod)
        plugins: list[FilterPlugin] = []
        allowed: frozenset[str] | None = None
        narrowing: list[str] = []
        try:
            for name in self.profile.filters:
                plugin = self._filter_plugin(name, pod)
                if plugin is None:
                    continue
                plugins.append(plugin)
                if plugin.node_names is not None:
                    narrowing.append(name)
                    allowed = plugin.node_names if allowed is None else allowed & plugin.node_names
        except PreFilterRejection as rejection:
            status = Status.unresolvable(rejection.message)
            return FilterOutcome({n.name: status for n in self.snapshot.nodes}, rejection.message)
        statuses: dict[str, Status | None] = {}
        for node in self.snapshot.nodes:
            if allowed is not None and node.name not in allowed:
                statuses[node.name] = Status.unresolvable(
                    framework.prefilter_narrowing_reason(narrowing)
                )
                continue
            statuses[node.name] = next(
                (s for s in (p.filter(node) for p in plugins) if s is not None), None
            )
        return FilterOutcome(statuses)

    def filter(self, pod: Pod) -> dict[str, list[str]]:
        """Each node's failure reasons for ``pod`` (an empty list: the node is feasible)."""
        return {
            name: list(status.reasons) if status else []
            for name, status in self.evaluate(pod).statuses.items()
        }

    # --- scores ----------------------------------------------------------------------

    def _plugin_scores(
        self, name: str, pod: Pod, feasible: list[NodeInfo]
    ) -> dict[str, int] | None:
        p = self.profile
        if name == names.TAINT_TOLERATION:
            return taint_toleration.score(pod, feasible)
        if name == names.NODE_AFFINITY:
            return node_affinity.score(pod, feasible, p.node_affinity.added_affinity)
        if name == names.NODE_RESOURCES_FIT:
            return node_resources_fit.score(pod, feasible, p.fit)
        if name == names.POD_TOPOLOGY_SPREAD:
            return pod_topology_spread.score(pod, self.snapshot, feasible, p.spread)
        if name == names.INTER_POD_AFFINITY:
            return inter_pod_affinity.score(pod, self.snapshot, feasible, p.inter_pod_affinity)
        if name == names.NODE_RESOURCES_BALANCED_ALLOCATION:
            return balanced_allocation.score(pod, feasible, p.balanced_allocation)
        if name == names.IMAGE_LOCALITY:
            return image_locality.score(pod, self.snapshot, feasible)
        if name == names.VOLUME_BINDING:
            return None  # scores only with StorageCapacityScoring, off in v1.34
        spec = registry.PLUGINS.get(name)
        if spec is not None and spec.static_score is not None:
            return static_scores(spec, self.profile.args_of(name), pod, feasible)
        raise PodInvalid(f"the reference has no score {name}")

    def scores_for(self, pod: Pod, feasible: list[str]) -> dict[str, dict[str, int]]:
        """Weighted score of every enabled score plugin on each of ``feasible``.

        A plugin kube-scheduler skips for this pod appears with 0.
        """
        infos = [self.snapshot.by_name[name] for name in feasible]
        out: dict[str, dict[str, int]] = {name: {} for name in feasible}
        for plugin, weight in self.profile.scores:
            normalised = self._plugin_scores(plugin, pod, infos) or {}
            for name in feasible:
                out[name][plugin] = normalised.get(name, 0) * weight
        return out

    def scores(self, pod: Pod) -> dict[str, dict[str, int]]:
        """Weighted scores per feasible node and plugin (infeasible nodes are absent)."""
        return self.scores_for(pod, self.evaluate(pod).feasible)

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
