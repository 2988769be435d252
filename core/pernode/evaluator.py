"""One pod evaluated plainly against the cluster: every filter, then every score, node by node.

kube-scheduler's Filter and Score plugins written per pod and per node (the modules of this
package, one per plugin), run as the framework runs them for one cycle. The evaluator
names no plugin: each plugin's spec contributes its per-node Filter and Score
(``PluginSpec.per_node``, gathered by ``registry.per_node``) or its static functions,
which ``static_plugins`` runs over the pod's nodes.

1. PreFilter: each filter plugin reads the pod and the whole snapshot. NodeAffinity
   may narrow the nodes to those its required terms pin by name (the others get
   "node(s) didn't satisfy plugin(s) [NodeAffinity]") or reject the pod outright.
2. Filter: each remaining node goes through the profile's filters in order; its
   reasons are those of the first filter that rejects it.
3. Score: each score plugin scores the feasible nodes, normalises to 0..100, and is
   multiplied by its weight; a node's total is the sum.

The burst kernel answers for many pods at once and reports neither per-node status codes
nor per-plugin scores; what needs those for one pod uses this: DefaultPreemption's dry run
(core/preemption.py), the queueing hints (``*_hint.py``), ``explain`` and the web
view. The tests' oracle (core/reference) drives the same evaluator through whole bursts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Self, cast

from kubesalvo.core.pernode.framework import (
    FilterPlugin,
    Pod,
    PodInvalid,
    PreFilterRejection,
    Status,
)
from kubesalvo.core.pernode.snapshot import NodeInfo, Snapshot
from kubesalvo.core.pernode.static_plugins import static_per_node
from kubesalvo.core.pernode.volumes import check_in_scope
from kubesalvo.core.plugins import framework, registry
from kubesalvo.core.plugins.framework import PerNodeFilter, PerNodeScore
from kubesalvo.core.profile import Profile
from kubesalvo.core.volumes import StorageObjects

__all__ = ["FilterOutcome", "PodEvaluator"]


@cache
def _contributions() -> tuple[dict[str, PerNodeFilter], dict[str, PerNodeScore]]:
    """Every plugin's per-node Filter and Score, by name: its own (``registry.per_node``)
    or else the one running its static functions. Gathered once, on first use: the
    plugins' loaders import the per-node modules."""
    own = registry.per_node()
    filters: dict[str, PerNodeFilter] = {}
    scores: dict[str, PerNodeScore] = {}
    for name, spec in registry.PLUGINS.items():
        static = static_per_node(spec)
        mine = own.get(name)
        plugin_filter = (mine and mine.filter) or static.filter
        plugin_score = (mine and mine.score) or static.score
        if plugin_filter is not None:
            filters[name] = plugin_filter
        if plugin_score is not None:
            scores[name] = plugin_score
    return filters, scores


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


class PodEvaluator:
    """Filter and score one pod against dict nodes and pods, node by node.

    ``nodes``, ``pods`` (bound ones carry ``spec.nodeName``), ``namespaces`` (for
    namespace selectors) and ``workloads`` (Services, ReplicationControllers,
    ReplicaSets, StatefulSets: the selectors of default spread constraints) are API
    JSON objects; ``snapshot`` holds them as NodeInfos, and a caller may change it
    between questions (preemption's dry run takes pods off a node).
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
        # DynamicResources' Filter failures (node name -> text) of pods with claims, by pod
        # uid, from their cycle (set by the caller: preemption's dry run)
        self.device_failures: dict[str, Mapping[str, str]] = {}
        # DynamicResources' cycle state (core/dra/pod.PodDevices) of pods with claims, by pod
        # uid (set by the caller: explain). Its Filter and its v1.37 Score then read it as
        # the burst's kernel did; the Score needs the Filter's allocations, so evaluate first.
        self.devices: dict[str, Any] = {}

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot, profile: Profile | None = None) -> Self:
        """An evaluator over a ready snapshot (say ``Cache.snapshot()`` after a history of
        node and pod events, where the order of events decides image sizes)."""
        ref = cls((), profile=profile)
        ref.snapshot = snapshot
        return ref

    # --- filters ---------------------------------------------------------------------

    def filter_plugin(self, name: str, pod: Pod) -> FilterPlugin | None:
        """The named filter for this pod's cycle (its constructor is the PreFilter), or
        None when it has nothing to check for the pod."""
        plugin_filter = _contributions()[0].get(name)
        if plugin_filter is None:
            raise PodInvalid(f"no per-node filter is written for {name}")
        return cast(FilterPlugin | None, plugin_filter(self, pod))

    def evaluate(self, pod: Pod) -> FilterOutcome:
        """Run PreFilter and Filter for ``pod`` on every node."""
        uid = (pod.get("metadata") or {}).get("uid", "")
        check_in_scope(pod, uid in self.devices or uid in self.device_failures)
        plugins: list[FilterPlugin] = []
        allowed: frozenset[str] | None = None
        narrowing: list[str] = []
        try:
            for name in self.profile.filters:
                plugin = self.filter_plugin(name, pod)
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
        plugin_score = _contributions()[1].get(name)
        if plugin_score is None:
            raise PodInvalid(f"no per-node score is written for {name}")
        return plugin_score(self, pod, feasible)

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
