"""DefaultPreemption's decision (kube-scheduler v1.34): which pods to evict, and where.

A pod that fits no node may evict pods of lower priority from ONE node. This module
decides; it does no I/O (``sched/preemption.py`` writes the decision to the API server).
The steps follow upstream's ``framework/preemption`` and ``plugins/defaultpreemption``:

1. Eligibility. A pod with ``preemptionPolicy: Never`` never preempts. A pod that already
   has ``status.nominatedNodeName`` waits while a lower-priority pod on that node is still
   terminating because of a preemption (it has a deletionTimestamp and the condition
   DisruptionTarget=True with reason PreemptionByScheduler), unless the nominated node now
   fails for an unresolvable reason (then it may preempt elsewhere).
2. Candidate nodes: only nodes whose filter failure is ``Unschedulable`` (removing pods
   could help). Nodes failing with ``UnschedulableAndUnresolvable`` (node name, node
   affinity/selector, untolerated taints, unschedulable nodes, a request above allocatable,
   missing spread topology labels, unmet pod affinity) are never tried.
3. Dry run per candidate node (``SelectVictimsOnNode``): take every lower-priority pod off
   the node; if the pod then passes every filter (inter-pod affinity and spread see the
   removals, and nominated pods of at least the pod's priority are counted on the node),
   put the victims back one by one, most important first (higher priority, then earlier
   start), first those whose eviction would violate a PodDisruptionBudget, then the
   others; a pod that can stay stays.
4. Search bound: nodes are tried in order from ``offset`` (wrapping), and the search
   stops once it holds ``max(minCandidateNodesPercentage% of candidates,
   minCandidateNodesAbsolute)`` candidates including at least one that violates no PDB
   (DefaultPreemptionArgs, defaults 10% and 100). kubesalvo honours the bound as upstream
   does; ``offset`` defaults to 0 (upstream draws it at random) so that decisions are
   reproducible, and the runtime may pass a random one.
5. Choice (``pickOneNodeForPreemption``): fewest PDB violations, then the lowest
   highest-victim priority, then the smallest sum of victim priorities (each shifted by
   2^31 so negatives count), then the fewest victims, then the latest earliest start time
   among the highest-priority victims, then the first candidate (violation-free ones come
   first, each group in the order tried).

Feasibility on a node is decided by the per-node filters (``core/pernode``: the
profile's filter plugins for one pod, node by node): they give kube-scheduler's per-node
status codes, which preemption needs and the burst kernel does not report, and they can
be asked about one node after pods are taken off it. To keep that affordable the picture
parses each pod template and node shape once, and the cluster-wide counts of PodTopologySpread and
InterPodAffinity are updated per node (minus the node's counts before, plus its counts
now) instead of recounted. A decision costs one filter pass over every node plus a few
filter runs on each node tried: about 1.5 s to build the picture and 1 s to decide for
5,000 nodes and 100,000 pods on one core.

Usage::

    decision = preempt(pod, nodes, pods, pdbs, profile)
    decision.node            # the chosen node, or None
    decision.victims         # pods to evict, most important first
    decision.message         # "preemption: ..." when no node was found, else ""
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesalvo.core.pernode.evaluator import PodEvaluator
from kubesalvo.core.pernode.framework import FilterPlugin, PreFilterRejection, Status
from kubesalvo.core.pernode.inter_pod_affinity import InterPodAffinity
from kubesalvo.core.pernode.pod_topology_spread import PodTopologySpread
from kubesalvo.core.pernode.selectors import InvalidSelector, label_selector
from kubesalvo.core.pernode.snapshot import NodeInfo, Snapshot, labels_of
from kubesalvo.core.plugins import default_preemption, framework
from kubesalvo.core.profile import Profile
from kubesalvo.core.resources import (
    host_ports,
    node_allocatable,
    pod_nonzero_requests,
    pod_requests,
)
from kubesalvo.core.volumes import StorageObjects

__all__ = [
    "NOT_ELIGIBLE_NEVER",
    "NOT_ELIGIBLE_TERMINATING",
    "PreemptionArgs",
    "PreemptionDecision",
    "Preemptor",
    "more_important",
    "pdb_violating",
    "pod_priority",
    "preempt",
]

Pod = Mapping[str, Any]

# PodEligibleToPreemptOthers' reasons (the post-filter message adds "preemption: ").
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
PREEMPTION_PREFIX = "preemption: "
# What marks a pod that the scheduler is evicting (set by sched/preemption.py before deleting).
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
_PRIORITY_SHIFT = 1 << 31  # math.MaxInt32 + 1
_FINISHED = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class PreemptionArgs:
    """DefaultPreemptionArgs (kube-scheduler's defaults)."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    def __post_init__(self) -> None:
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        if not 0 <= pct <= 100:
            raise ValueError("minCandidateNodesPercentage: must be in the range [0, 100]")
        if absolute < 0:
            raise ValueError("minCandidateNodesAbsolute: must be greater than or equal to 0")
        if pct == 0 and absolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage and minCandidateNodesAbsolute: both cannot be zero"
            )

    def num_candidates(self, nodes: int) -> int:
        """How many candidates the dry run looks for among ``nodes`` potential nodes."""
        wanted = nodes * self.min_candidate_nodes_percentage // 100
        return min(max(wanted, self.min_candidate_nodes_absolute), nodes)


@dataclass
class PreemptionDecision:
    """What preemption decided for one pod.

    ``nominated_node_name``: the value ``status.nominatedNodeName`` must take: the chosen
    node; ``""`` to clear it (no node can help); None to leave it as it is (the pod was not
    eligible). ``message`` is the post-filter part of the FailedScheduling text (empty
    when a node was found, as upstream adds nothing then).
    """

    node: str | None
    victims: list[Pod] = field(default_factory=list)
    pdb_violations: int = 0
    nominated_node_name: str | None = None
    message: str = ""
    # Lower-priority pods nominated to ``node`` whose nomination must be cleared.
    clear_nominated: list[Pod] = field(default_factory=list)
    # Per-node dry-run reasons counted in ``message`` (for explain/debug).
    reason_counts: dict[str, int] = field(default_factory=dict)
    nodes_tried: int = 0


# --- pod helpers ---------------------------------------------------------------------


def pod_priority(pod: Pod) -> int:
    """corev1helpers.PodPriority: ``spec.priority``, 0 when unset."""
    value = (pod.get("spec") or {}).get("priority")
    return int(value) if value is not None else 0


def _uid(pod: Pod) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def _parse_time(text: str) -> float:
    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def start_time(pod: Pod, now: float) -> float:
    """util.GetPodStartTime: ``status.startTime``, or now for a pod not started yet."""
    text = (pod.get("status") or {}).get("startTime")
    return _parse_time(text) if text else now


def more_important(now: float) -> Callable[[Pod], tuple[int, float]]:
    """A sort key putting the most important pod first (util.MoreImportantPod):
    higher priority first, then the one that started earlier."""
    return lambda pod: (-pod_priority(pod), start_time(pod, now))


def _terminating_by_preemption(pod: Pod) -> bool:
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == DISRUPTION_TARGET:
            return (
                condition.get("status") == "True"
                and condition.get("reason") == PREEMPTION_BY_SCHEDULER
            )
    return False


def pdb_violating(
    victims: Sequence[Pod], pdbs: Iterable[Mapping[str, Any]]
) -> tuple[list[Pod], list[Pod]]:
    """filterPodsWithPDBViolation: split ``victims`` (order kept) into those whose eviction
    would take a PodDisruptionBudget below its allowed disruptions, and the rest.

    Each PDB's ``status.disruptionsAllowed`` is spent by the victims it selects, in order;
    a victim listed in ``status.disruptedPods`` is already counted there. A PDB with no
    selector or an empty one, or an invalid one, selects nothing.
    """
    budgets: list[list[Any]] = []  # [namespace, selector, disrupted pods, disruptions left]
    for pdb in pdbs:
        raw = (pdb.get("spec") or {}).get("selector")
        try:
            selector = label_selector(raw)
        except InvalidSelector:
            continue
        if selector.requirements is None or selector.empty:
            continue
        status = pdb.get("status") or {}
        budgets.append(
            [
                (pdb.get("metadata") or {}).get("namespace") or "default",
                selector,
                set((status.get("disruptedPods") or {}).keys()),
                int(status.get("disruptionsAllowed") or 0),
            ]
        )
    violating: list[Pod] = []
    others: list[Pod] = []
    for pod in victims:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        namespace = meta.get("namespace") or "default"
        violated = False
        if labels:  # a pod without labels matches no PDB
            for budget in budgets:
                if budget[0] != namespace or not budget[1].matches(labels):
                    continue
                if meta.get("name", "") in budget[2]:
                    continue
                budget[3] -= 1
                if budget[3] < 0:
                    violated = True
        (violating if violated else others).append(pod)
    return violating, others


def _has_required_anti_affinity(pod: Pod) -> bool:
    anti = ((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}
    return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))


# --- the cluster picture, with each pod's usage parsed once -------------------------


def _usage_key(pod: Pod) -> bytes:
    """What a pod's requests and host ports depend on: pods of one template share it."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}

    def containers(raw: Any) -> list[Any]:
        return [
            (c.get("name"), c.get("resources"), c.get("ports"), c.get("restartPolicy"))
            for c in raw or ()
        ]

    reported = [
        (s.get("name"), s.get("resources"), s.get("allocatedResources"))
        for s in (status.get("containerStatuses") or [])
        + (status.get("initContainerStatuses") or [])
    ]
    resize = [
        c.get("reason")
        for c in status.get("conditions") or ()
        if c.get("type") == "PodResizePending"
    ]
    return msgspec.json.encode(
        (
            containers(spec.get("containers")),
            containers(spec.get("initContainers")),
            spec.get("overhead"),
            spec.get("resources"),
            reported,
            resize,
        )
    )


_Usage = tuple[dict[str, int], tuple[int, int], list[tuple[str, str, int]]]


class _Usages:
    """Requests, scoring requests and host ports per pod template, parsed once."""

    def __init__(self) -> None:
        self.by_key: dict[bytes, _Usage] = {}

    def of(self, pod: Pod) -> _Usage:
        key = _usage_key(pod)
        usage = self.by_key.get(key)
        if usage is None:
            ports = [(p.host_ip or "0.0.0.0", p.protocol or "TCP", p.port) for p in host_ports(pod)]
            usage = (
                pod_requests(pod, use_status=True),
                pod_nonzero_requests(pod, use_status=True),
                ports,
            )
            self.by_key[key] = usage
        return usage


@dataclass
class _NodeInfo(NodeInfo):
    """The per-node evaluator's NodeInfo, adding and removing pods through ``_Usages`` (the same
    bookkeeping as ``NodeInfo.add_pod``/``remove_pod``, without re-parsing quantities)."""

    usages: _Usages = field(default_factory=_Usages)

    def add_pod(self, pod: Pod) -> None:
        requests, (cpu, memory), ports = self.usages.of(pod)
        self.pods.append(pod)
        for name, amount in requests.items():
            self.requested[name] = self.requested.get(name, 0) + amount
        self.nonzero_cpu += cpu
        self.nonzero_memory += memory
        self.used_ports.update(ports)

    def remove_pod(self, pod: Pod) -> None:
        requests, (cpu, memory), ports = self.usages.of(pod)
        self.pods.remove(pod)
        for name, amount in requests.items():
            self.requested[name] = self.requested.get(name, 0) - amount
        self.nonzero_cpu -= cpu
        self.nonzero_memory -= memory
        self.used_ports.difference_update(ports)


def _node_info(
    node: Mapping[str, Any], usages: _Usages, allocatables: dict[bytes, dict[str, int]]
) -> _NodeInfo:
    """NodeInfo.of, parsing each distinct ``status.allocatable`` once (nodes of one shape
    share it)."""
    raw = (node.get("status") or {}).get("allocatable")
    key = msgspec.json.encode(raw)
    allocatable = allocatables.get(key)
    if allocatable is None:
        allocatable = allocatables[key] = node_allocatable(node)
    spec = node.get("spec") or {}
    return _NodeInfo(
        node=node,
        name=(node.get("metadata") or {}).get("name", ""),
        labels=labels_of(node),
        taints=list(spec.get("taints") or ()),
        unschedulable=bool(spec.get("unschedulable")),
        allocatable=dict(allocatable),
        usages=usages,
    )


def _snapshot(
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Pod],
    namespaces: Iterable[Mapping[str, Any]],
    workloads: Iterable[Mapping[str, Any]],
) -> Snapshot:
    """Snapshot.build with ``_NodeInfo`` nodes: pods on unknown nodes and finished pods are
    left out, as there; node images too, as no filter reads them (only ImageLocality's
    score does)."""
    usages = _Usages()
    allocatables: dict[bytes, dict[str, int]] = {}
    infos = [_node_info(node, usages, allocatables) for node in nodes]
    by_name = {info.name: info for info in infos}
    if len(by_name) != len(infos):
        raise ValueError("node names must be unique")
    for pod in pods:
        host = by_name.get((pod.get("spec") or {}).get("nodeName") or "")
        if host is not None and (pod.get("status") or {}).get("phase") not in _FINISHED:
            host.add_pod(pod)
    bare = Snapshot.build((), (), namespaces, workloads)
    return dataclasses.replace(
        bare,
        nodes=list(infos),
        by_name=dict(by_name),
        node_images={n: frozenset() for n in by_name},
    )


# --- the filters, asked about one node at a time --------------------------------------


class _NodeFilters:
    """The profile's filters for one pod, run against one node at a time.

    The PreFilter work of PodTopologySpread and InterPodAffinity counts pods across the
    cluster. Those counts are sums over nodes, so when the pods of one node change they
    are updated as upstream's AddPod/RemovePod do: the cluster-wide counts, minus that
    node's counts as it was (``focus``), plus its counts now, each node's counts taken by
    the same plugin over a snapshot of that node alone.
    """

    def __init__(self, evaluator: PodEvaluator, pod: Pod, anti_affinity_anywhere: bool) -> None:
        self.evaluator = evaluator
        self.pod = pod
        self.rejection: str | None = None
        self.names: list[str] = []
        self.cluster: list[FilterPlugin] = []  # PreFilter state over the whole cluster
        self.plugins: list[FilterPlugin] = []  # what filters use now
        self.allowed: frozenset[str] | None = None
        self.narrowing: list[str] = []
        self.dynamic: list[int] = []  # plugins whose counts follow the node's pods
        self.before: dict[str, dict[int, FilterPlugin]] = {}  # node -> its own counts
        try:
            for name in evaluator.profile.filters:
                # The evaluator's own plugin table keeps the two in step.
                plugin = evaluator.filter_plugin(name, pod)
                if plugin is None:
                    continue
                if plugin.node_names is not None:
                    self.narrowing.append(name)
                    allowed = plugin.node_names
                    self.allowed = allowed if self.allowed is None else self.allowed & allowed
                if self._counts_cluster(plugin, anti_affinity_anywhere):
                    self.dynamic.append(len(self.plugins))
                self.names.append(name)
                self.plugins.append(plugin)
        except PreFilterRejection as rejection:
            self.rejection = rejection.message
        self.cluster = list(self.plugins)

    @staticmethod
    def _counts_cluster(plugin: FilterPlugin, anti_affinity_anywhere: bool) -> bool:
        if isinstance(plugin, PodTopologySpread):
            return bool(plugin.constraints)
        if isinstance(plugin, InterPodAffinity):
            return bool(plugin.affinity or plugin.anti_affinity or anti_affinity_anywhere)
        return False

    def _local(self, index: int, node: NodeInfo) -> FilterPlugin:
        """Plugin ``index`` built over a snapshot holding ``node`` alone."""
        alone = dataclasses.replace(
            self.evaluator.snapshot, nodes=[node], by_name={node.name: node}
        )
        plugin = self.cluster[index]
        if isinstance(plugin, InterPodAffinity):
            return InterPodAffinity(self.pod, alone)
        assert isinstance(plugin, PodTopologySpread)
        return PodTopologySpread(self.pod, alone, self.evaluator.profile.spread)

    def focus(self, node: NodeInfo) -> None:
        """Remember the node's own counts before its pods change (once per node)."""
        if self.dynamic and node.name not in self.before:
            self.before[node.name] = {i: self._local(i, node) for i in self.dynamic}

    def refresh(self, node: NodeInfo) -> None:
        """Counts for the cluster with ``node`` as it is now (``focus`` came first)."""
        for index in self.dynamic:
            self.plugins[index] = _combined(
                self.cluster[index], self.before[node.name][index], self._local(index, node)
            )

    def reset(self) -> None:
        """Back to the cluster's counts (every node as it was)."""
        self.plugins = list(self.cluster)

    def status(self, node: NodeInfo) -> Status | None:
        """The node's status for the pod (None: it fits), with the current counts."""
        if self.rejection is not None:
            return Status.unresolvable(self.rejection)
        if self.allowed is not None and node.name not in self.allowed:
            return Status.unresolvable(framework.prefilter_narrowing_reason(self.narrowing))
        for plugin in self.plugins:
            status = plugin.filter(node)
            if status is not None:
                return status
        return None

    def check(self, node: NodeInfo, nominated: Sequence[Pod]) -> Status | None:
        """RunFilterPluginsWithNominatedPods: fit with the nominated pods on the node, and
        (when there were any) without them too."""
        self.focus(node)
        if nominated:
            for other in nominated:
                node.add_pod(other)
            try:
                self.refresh(node)
                status = self.status(node)
            finally:
                for other in nominated:
                    node.remove_pod(other)
            if status is not None:
                return status
        self.refresh(node)
        return self.status(node)


def _combined(cluster: FilterPlugin, before: FilterPlugin, now: FilterPlugin) -> FilterPlugin:
    """``cluster`` with one node's counts ``before`` replaced by its counts ``now``."""
    out = copy.copy(cluster)
    if isinstance(out, InterPodAffinity):
        assert isinstance(before, InterPodAffinity) and isinstance(now, InterPodAffinity)
        for attr in ("existing_anti", "affinity_counts", "anti_counts"):
            counts = Counter(getattr(cluster, attr))
            counts.subtract(getattr(before, attr))
            counts.update(getattr(now, attr))
            setattr(out, attr, +counts)  # as upstream, a count that reaches 0 is dropped
        return out
    assert isinstance(out, PodTopologySpread) and isinstance(cluster, PodTopologySpread)
    assert isinstance(before, PodTopologySpread) and isinstance(now, PodTopologySpread)
    merged = []
    for total, old, new in zip(cluster.counts, before.counts, now.counts, strict=True):
        domains = dict(total)  # a domain stays known at 0 while one of its nodes exists
        for value, count in old.items():
            domains[value] -= count
        for value, count in new.items():
            domains[value] = domains.get(value, 0) + count
        merged.append(domains)
    out.counts = merged
    return out


# --- the evaluator --------------------------------------------------------------------


class Preemptor:
    """Preemption decisions against one picture of the cluster.

    Built once from API dicts (nodes, pods - bound ones carry ``spec.nodeName``,
    namespaces, PodDisruptionBudgets); ``preempt(pod)`` decides for one pod and changes
    nothing; ``commit(pod, decision)`` takes the victims off and records the nomination,
    so that later pods of the same burst see it (as kube-scheduler's next cycles would).
    """

    def __init__(
        self,
        nodes: Iterable[Mapping[str, Any]],
        pods: Iterable[Pod],
        pdbs: Iterable[Mapping[str, Any]] = (),
        profile: Profile | None = None,
        *,
        namespaces: Iterable[Mapping[str, Any]] = (),
        workloads: Iterable[Mapping[str, Any]] = (),
        args: PreemptionArgs | None = None,
        storage: StorageObjects | None = None,
    ) -> None:
        pods = list(pods)
        self.args = args or PreemptionArgs()
        self.pdbs = list(pdbs)
        namespaces, workloads = list(namespaces), list(workloads)
        self.evaluator = PodEvaluator((), (), namespaces, profile, workloads)
        self.evaluator.snapshot = _snapshot(nodes, pods, namespaces, workloads)
        if storage is not None:  # the volume filters' objects (their dry run reads them)
            self.evaluator.storage = storage
        self.nominated: dict[str, list[Pod]] = {}
        for pod in pods:
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            nominated = status.get("nominatedNodeName")
            if nominated and not spec.get("nodeName"):
                self.nominated.setdefault(nominated, []).append(pod)
        self.anti_affinity_anywhere = any(_has_required_anti_affinity(p) for p in pods)

    @property
    def num_nodes(self) -> int:
        return len(self.evaluator.snapshot.nodes)

    def _nominated_on(self, node: str, pod: Pod) -> list[Pod]:
        """Nominated pods counted when filtering ``pod`` on ``node``: those of at least
        its priority, other than itself."""
        priority, uid = pod_priority(pod), _uid(pod)
        return [
            p
            for p in self.nominated.get(node, ())
            if p is not pod and pod_priority(p) >= priority and (not uid or _uid(p) != uid)
        ]

    def eligible(self, pod: Pod, nominated_status: Status | None, node_known: bool) -> str:
        """PodEligibleToPreemptOthers: "" when eligible, else the reason."""
        if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
            return NOT_ELIGIBLE_NEVER
        nominated = (pod.get("status") or {}).get("nominatedNodeName")
        if not nominated or not node_known:
            return ""  # an unknown node counts as unresolvable: preempt again
        if nominated_status is not None and (
            nominated_status.code is framework.Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        ):
            return ""
        priority = pod_priority(pod)
        for other in self.evaluator.snapshot.by_name[nominated].pods:
            if pod_priority(other) < priority and _terminating_by_preemption(other):
                return NOT_ELIGIBLE_TERMINATING
        return ""

    def preempt(self, pod: Pod, *, offset: int = 0, now: float | None = None) -> PreemptionDecision:
        """Decide for ``pod``, which fit no node; see the module docstring for the rules."""
        now = time.time() if now is None else now
        snapshot = self.evaluator.snapshot
        filters = _NodeFilters(self.evaluator, pod, self.anti_affinity_anywhere)
        # The statuses the failed cycle saw: nominated pods of at least the pod's priority
        # count on their node, as upstream's filters run with them.
        statuses = {
            node.name: (
                filters.check(node, waiting)
                if (waiting := self._nominated_on(node.name, pod))
                else filters.status(node)
            )
            for node in snapshot.nodes
        }
        filters.reset()
        nominated = (pod.get("status") or {}).get("nominatedNodeName") or ""
        reason = self.eligible(pod, statuses.get(nominated), nominated in snapshot.by_name)
        if reason:
            return PreemptionDecision(None, message=PREEMPTION_PREFIX + reason)
        potential = [
            node
            for node in snapshot.nodes
            if (status := statuses[node.name]) is not None
            and status.code is framework.Code.UNSCHEDULABLE
        ]
        wanted = self.args.num_candidates(len(potential))
        free: list[tuple[str, list[Pod], int]] = []
        violating: list[tuple[str, list[Pod], int]] = []
        failures: dict[str, Status] = {}
        tried = 0
        for i in range(len(potential)):
            node = potential[(offset + i) % len(potential)]
            tried += 1
            victims, violations, status = self._select_victims(filters, pod, node, now)
            if status is not None:
                failures[node.name] = status
                continue
            # Upstream keeps at most ``wanted`` candidates of each kind.
            kind = violating if violations else free
            if len(kind) < wanted:
                kind.append((node.name, victims, violations))
            if free and len(free) + len(violating) >= wanted:
                break
        candidates = free + violating
        if not candidates:
            counts: dict[str, int] = {}
            for status in failures.values():
                for text in status.reasons:
                    counts[text] = counts.get(text, 0) + 1
            untried = self.num_nodes - len(failures)
            if untried:
                counts[default_preemption.PREEMPTION_NOT_HELPFUL] = (
                    counts.get(default_preemption.PREEMPTION_NOT_HELPFUL, 0) + untried
                )
            return PreemptionDecision(
                None,
                nominated_node_name="",
                message=default_preemption.preemption_message(self.num_nodes, counts),
                reason_counts=counts,
                nodes_tried=tried,
            )
        chosen, victims, violations = _pick(candidates, now)
        priority = pod_priority(pod)
        uid = _uid(pod)
        lower = [
            p
            for p in self.nominated.get(chosen, ())
            if p is not pod and pod_priority(p) < priority and (not uid or _uid(p) != uid)
        ]
        return PreemptionDecision(
            chosen,
            victims,
            violations,
            nominated_node_name=chosen,
            clear_nominated=lower,
            nodes_tried=tried,
        )

    def _select_victims(
        self, filters: _NodeFilters, pod: Pod, node: NodeInfo, now: float
    ) -> tuple[list[Pod], int, Status | None]:
        """SelectVictimsOnNode; the node is left exactly as it was found."""
        priority = pod_priority(pod)
        potential = [p for p in node.pods if pod_priority(p) < priority]
        if not potential:
            return [], 0, Status.unresolvable(default_preemption.NO_PREEMPTION_VICTIMS)
        nominated = self._nominated_on(node.name, pod)
        filters.focus(node)
        for victim in potential:
            node.remove_pod(victim)
        victims: list[Pod] = []
        try:
            status = filters.check(node, nominated)
            if status is not None:
                return [], 0, status
            potential.sort(key=more_important(now))
            violating, others = pdb_violating(potential, self.pdbs)
            violations = 0
            for group in (violating, others):
                for candidate in group:
                    node.add_pod(candidate)
                    if filters.check(node, nominated) is not None:
                        node.remove_pod(candidate)
                        victims.append(candidate)
                        violations += group is violating
            if violating and others:
                victims.sort(key=more_important(now))
            return victims, violations, None
        finally:
            present = {id(p) for p in node.pods}
            for victim in potential:
                if id(victim) not in present:
                    node.add_pod(victim)
            filters.reset()

    def commit(self, pod: Pod, decision: PreemptionDecision) -> None:
        """Apply ``decision`` to this picture: victims gone, ``pod`` nominated to the node,
        cleared nominations dropped."""
        if decision.node is None:
            return
        node = self.evaluator.snapshot.by_name[decision.node]
        for victim in decision.victims:
            if any(p is victim for p in node.pods):
                node.remove_pod(victim)
        cleared = {id(p) for p in decision.clear_nominated}
        for name, waiting in self.nominated.items():
            self.nominated[name] = [p for p in waiting if id(p) not in cleared and p is not pod]
        self.nominated.setdefault(decision.node, []).append(pod)


def _pick(candidates: list[tuple[str, list[Pod], int]], now: float) -> tuple[str, list[Pod], int]:
    """pickOneNodeForPreemption over (node, victims most important first, violations)."""

    def earliest_top_start(victims: list[Pod]) -> float:
        top = pod_priority(victims[0])
        times = [start_time(v, now) for v in victims if pod_priority(v) == top]
        return min(times)

    rules: list[Callable[[tuple[str, list[Pod], int]], float]] = [
        lambda c: -c[2],
        lambda c: -pod_priority(c[1][0]),
        lambda c: -sum(pod_priority(v) + _PRIORITY_SHIFT for v in c[1]),
        lambda c: -len(c[1]),
        lambda c: earliest_top_start(c[1]),
    ]
    remaining = candidates
    for rule in rules:
        scores = [rule(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def preempt(
    pod: Pod,
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Pod],
    pdbs: Iterable[Mapping[str, Any]] = (),
    profile: Profile | None = None,
    *,
    namespaces: Iterable[Mapping[str, Any]] = (),
    workloads: Iterable[Mapping[str, Any]] = (),
    args: PreemptionArgs | None = None,
    offset: int = 0,
    now: float | None = None,
    storage: StorageObjects | None = None,
) -> PreemptionDecision:
    """Decide preemption for one pod that fit no node (see :class:`Preemptor`)."""
    preemptor = Preemptor(
        nodes,
        pods,
        pdbs,
        profile,
        namespaces=namespaces,
        workloads=workloads,
        args=args,
        storage=storage,
    )
    return preemptor.preempt(pod, offset=offset, now=now)
