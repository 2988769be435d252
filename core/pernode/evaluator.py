"""One pod evaluated plainly against the cluster: every filter, then every score, node by node.

kube-scheduler's Filter and Score plugins written per pod and per node (the modules of this
package, one per plugin), run as the framework runs them for one cycle:

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
from typing import Any, Self, cast

import numpy as np

from kubesalvo.core.pernode import (
    balanced_allocation,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_resources_fit,
    pod_topology_spread,
    taint_toleration,
)
from kubesalvo.core.pernode.dynamic_resources import DeviceVerdicts
from kubesalvo.core.pernode.framework import (
    FilterPlugin,
    Pod,
    PodInvalid,
    PreFilterRejection,
    Status,
)
from kubesalvo.core.pernode.inter_pod_affinity import InterPodAffinity
from kubesalvo.core.pernode.node_affinity import NodeAffinity
from kubesalvo.core.pernode.node_name import NodeName
from kubesalvo.core.pernode.node_ports import NodePorts
from kubesalvo.core.pernode.node_resources_fit import NodeResourcesFit
from kubesalvo.core.pernode.node_unschedulable import NodeUnschedulable
from kubesalvo.core.pernode.pod_topology_spread import PodTopologySpread
from kubesalvo.core.pernode.snapshot import NodeInfo, Snapshot
from kubesalvo.core.pernode.static_plugins import StaticFilter, channel_scores, static_scores
from kubesalvo.core.pernode.taint_toleration import TaintToleration
from kubesalvo.core.pernode.volumes import capacity_score, check_in_scope, volume_filter
from kubesalvo.core.plugins import framework, names, registry
from kubesalvo.core.profile import Profile
from kubesalvo.core.volumes import StorageObjects

__all__ = ["FilterOutcome", "PodEvaluator"]

# The volume filters (core/pernode/volumes.py: they read ``storage``).
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
            uid = (pod.get("metadata") or {}).get("uid", "")
            failures = self.device_failures.get(uid)
            if failures is None and uid in self.devices:
                failures = self._device_failures(self.devices[uid])
            # Without its cycle's verdicts (a pod without claims) it admits every node.
            return None if failures is None else DeviceVerdicts(failures)
        spec = registry.PLUGINS.get(name)
        if spec is not None and spec.static_filter is not None:
            return StaticFilter(spec, self.profile.args_of(name), pod, self.snapshot.nodes)
        raise PodInvalid(f"no per-node filter is written for {name}")

    def _device_failures(self, devices: Any) -> Mapping[str, str]:
        """The Filter of a pod's DynamicResources cycle state on every node (it keeps the
        allocation it finds on each node that passes: what the Score reads). A rejection or
        error of its PreFilter rejects the pod on every node, as in the burst."""
        problem = devices.rejection or devices.error
        if problem:
            raise PreFilterRejection(names.DYNAMIC_RESOURCES, problem)
        nodes = self.snapshot.nodes
        failures: Mapping[str, str] = devices.node_failures(
            [n.name for n in nodes], np.ones(len(nodes), dtype=bool), lambda row: nodes[row].labels
        )
        return failures

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
            # Scores only with StorageCapacityScoring on (its args then have a shape).
            shape = [(pt.utilization, pt.score) for pt in p.args_of(name).shape]
            if not shape:
                return None
            return {n.name: capacity_score(pod, self.storage, n, shape) for n in feasible}
        spec = registry.PLUGINS.get(name)
        if spec is not None and spec.static_score is not None:
            return static_scores(spec, self.profile.args_of(name), pod, feasible)
        if spec is not None and spec.score_channel is not None:
            uid = (pod.get("metadata") or {}).get("uid", "")
            return channel_scores(
                spec, self.profile.args_of(name), pod, feasible, devices=self.devices.get(uid)
            )
        raise PodInvalid(f"no per-node score is written for {name}")

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
