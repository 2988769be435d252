"""PodTopologySpread: keep matching pods evenly spread over topology domains.

Constraints come from the pod's ``topologySpreadConstraints``; a pod that declares
none gets the profile's default constraints (kube-scheduler's System defaults: soft,
hosts maxSkew 3 and zones maxSkew 5) with a selector built from the Services,
ReplicationControllers, ReplicaSets and StatefulSets that select or own it; no such
workload means no default constraint. ``matchLabelKeys`` add the pod's own values of
those labels to the selector.

A node takes part in a constraint when it has every constraint's topology key and
passes the inclusion policies: ``nodeAffinityPolicy`` Honor (the default) requires the
pod's nodeSelector and required node affinity to match it, ``nodeTaintsPolicy`` Honor
(default Ignore) requires the pod to tolerate its NoSchedule/NoExecute taints. Pods
counted are those in the pod's namespace, not being deleted, matched by the selector
(an empty selector counts nothing).

Invalid selectors: one in the pod's own constraints fails the attempt with an error
(SchedulingError: in PreFilter for DoNotSchedule constraints, in PreScore for
ScheduleAnyway ones); an invalid ReplicaSet or StatefulSet selector is left out of the
default constraints' selector.

Filter (DoNotSchedule constraints), in constraint order: a node without the topology
key fails with "(missing required label)"; otherwise the domain's count, plus one if
the pod matches its own selector, minus the smallest count over all domains (0 when
there are fewer domains than ``minDomains``) must not exceed ``maxSkew``.

Score (ScheduleAnyway constraints): for each constraint, count * log(domains + 2) +
(maxSkew - 1), summed and rounded; domains are those of the feasible nodes (hosts
count one each). Nodes missing a key get 0 (unless only System defaults apply); the
rest map to 100 * (max + min - score) / max, so the emptiest domain scores 100.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesalvo.core.pernode.framework import (
    Pod,
    SchedulingError,
    Status,
    go_round,
    untolerated_taint,
)
from kubesalvo.core.pernode.node_affinity import RequiredNodeAffinity
from kubesalvo.core.pernode.selectors import (
    InvalidSelector,
    Selector,
    label_selector,
    selector_from_set,
)
from kubesalvo.core.pernode.snapshot import NodeInfo, Snapshot, labels_of, namespace_of
from kubesalvo.core.plugins import pod_topology_spread
from kubesalvo.core.plugins.framework import PerNode
from kubesalvo.core.plugins.pod_topology_spread import PodTopologySpreadArgs, SpreadDefaulting

HOSTNAME = "kubernetes.io/hostname"
# How an invalid selector in one of the pod's own constraints fails the attempt: in
# PreFilter for DoNotSchedule constraints, in PreScore for ScheduleAnyway ones.
_CONSTRAINT_ERRORS = {
    "DoNotSchedule": pod_topology_spread.HARD_SPREAD_CONSTRAINTS_ERROR,
    "ScheduleAnyway": pod_topology_spread.SOFT_SPREAD_CONSTRAINTS_ERROR,
}
_MAX_INT32 = (1 << 31) - 1


@dataclass(frozen=True)
class Constraint:
    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_node_taints: bool = False


def _merge_match_label_keys(
    selector: Selector, keys: list[str], pod_labels: Mapping[str, str]
) -> Selector:
    """mergeLabelSetWithSelector: the pod's values of ``keys`` ANDed to the selector."""
    values = {k: pod_labels[k] for k in keys if k in pod_labels}
    if not values or selector.requirements is None:
        return selector
    return selector_from_set(values).with_requirements(selector.requirements)


def default_selector(pod: Pod, snapshot: Snapshot) -> Selector:
    """helper.DefaultSelector: what the pod's Services and controller select."""
    namespace = namespace_of(pod)
    pod_labels = labels_of(pod)
    merged: dict[str, str] = {}
    same_ns = [w for w in snapshot.workloads if namespace_of(w) == namespace]
    for service in (w for w in same_ns if w.get("kind") == "Service"):
        wanted = (service.get("spec") or {}).get("selector")
        if wanted is not None and selector_from_set(wanted).matches(pod_labels):
            merged.update(wanted)
    selector = selector_from_set(merged)
    owner = next(
        (
            o
            for o in (pod.get("metadata") or {}).get("ownerReferences") or ()
            if o.get("controller")
        ),
        None,
    )
    if owner is None:
        return selector
    kinds = {
        ("v1", "ReplicationController"),
        ("apps/v1", "ReplicaSet"),
        ("apps/v1", "StatefulSet"),
    }
    if (owner.get("apiVersion"), owner.get("kind")) not in kinds:
        return selector
    for workload in same_ns:
        if workload.get("kind") != owner.get("kind"):
            continue
        if (workload.get("metadata") or {}).get("name") != owner.get("name"):
            continue
        raw = (workload.get("spec") or {}).get("selector")
        if owner.get("kind") == "ReplicationController":
            merged.update(raw or {})
            return selector_from_set(merged)
        try:
            theirs = label_selector(raw)
        except InvalidSelector:
            return selector
        return selector.with_requirements(theirs.requirements or ())
    return selector


def constraints(
    pod: Pod, snapshot: Snapshot | None, args: PodTopologySpreadArgs, action: str
) -> list[Constraint]:
    """The pod's constraints with ``whenUnsatisfiable == action``, or the defaults (whose
    selector comes from ``snapshot``'s Services and controllers: None only where the
    caller knows no default applies)."""
    raw = (pod.get("spec") or {}).get("topologySpreadConstraints") or []
    pod_labels = labels_of(pod)
    out = []
    if raw:
        for c in raw:
            if c.get("whenUnsatisfiable") != action:
                continue
            try:
                selector = label_selector(c.get("labelSelector"))
            except InvalidSelector as err:
                raise SchedulingError(_CONSTRAINT_ERRORS[action] + str(err)) from err
            selector = _merge_match_label_keys(
                selector, list(c.get("matchLabelKeys") or ()), pod_labels
            )
            out.append(
                Constraint(
                    max_skew=int(c.get("maxSkew", 1)),
                    topology_key=c.get("topologyKey", ""),
                    selector=selector,
                    min_domains=int(c.get("minDomains") or 1),
                    honor_node_affinity=(c.get("nodeAffinityPolicy") or "Honor") == "Honor",
                    honor_node_taints=(c.get("nodeTaintsPolicy") or "Ignore") == "Honor",
                )
            )
        return out
    defaults = [c for c in args.effective_constraints if c.when_unsatisfiable == action]
    if not defaults:
        return []
    if snapshot is None:
        raise ValueError("default spreading constraints need a snapshot")
    selector = default_selector(pod, snapshot)
    if selector.empty:
        return []
    return [Constraint(c.max_skew, c.topology_key, selector) for c in defaults]


def count_matching(node: NodeInfo, selector: Selector, namespace: str) -> int:
    if selector.empty:
        return 0
    return sum(
        1
        for p in node.pods
        if namespace_of(p) == namespace
        and not (p.get("metadata") or {}).get("deletionTimestamp")
        and selector.matches(labels_of(p))
    )


def _has_all_keys(node: NodeInfo, cs: list[Constraint]) -> bool:
    return all(c.topology_key in node.labels for c in cs)


class _Inclusion:
    """Whether a node counts for a constraint (its inclusion policies)."""

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.required = RequiredNodeAffinity(pod)

    def includes(self, c: Constraint, node: NodeInfo) -> bool:
        if c.honor_node_affinity and not self.required.matches(node):
            return False
        return not (c.honor_node_taints and untolerated_taint(self.pod, node) is not None)


class PodTopologySpread:
    node_names: frozenset[str] | None = None

    def __init__(self, pod: Pod, snapshot: Snapshot, args: PodTopologySpreadArgs) -> None:
        self.constraints = constraints(pod, snapshot, args, "DoNotSchedule")
        self.pod_labels = labels_of(pod)
        namespace = namespace_of(pod)
        inclusion = _Inclusion(pod)
        self.counts: list[dict[str, int]] = [{} for _ in self.constraints]
        for node in snapshot.nodes:
            if not _has_all_keys(node, self.constraints):
                continue
            for i, c in enumerate(self.constraints):
                if inclusion.includes(c, node):
                    value = node.labels[c.topology_key]
                    self.counts[i][value] = self.counts[i].get(value, 0) + count_matching(
                        node, c.selector, namespace
                    )

    def filter(self, node: NodeInfo) -> Status | None:
        for i, c in enumerate(self.constraints):
            if c.topology_key not in node.labels:
                return Status.unresolvable(pod_topology_spread.ERR_REASON_SPREAD_MISSING_LABEL)
            domains = self.counts[i]
            smallest = (
                0 if len(domains) < c.min_domains else min(domains.values(), default=_MAX_INT32)
            )
            own = 1 if c.selector.matches(self.pod_labels) else 0
            skew = domains.get(node.labels[c.topology_key], 0) + own - smallest
            if skew > c.max_skew:
                return Status.unschedulable(pod_topology_spread.ERR_REASON_SPREAD_CONSTRAINTS)
        return None


def score(
    pod: Pod, snapshot: Snapshot, feasible: list[NodeInfo], args: PodTopologySpreadArgs
) -> dict[str, int] | None:
    if not snapshot.nodes:
        return None
    soft = constraints(pod, snapshot, args, "ScheduleAnyway")
    if not soft:
        return None
    own_constraints = bool((pod.get("spec") or {}).get("topologySpreadConstraints"))
    require_all = own_constraints or args.defaulting_type is not SpreadDefaulting.SYSTEM
    ignored = {n.name for n in feasible if require_all and not _has_all_keys(n, soft)}
    domains: list[dict[str, int]] = [{} for _ in soft]
    for node in feasible:
        if node.name in ignored:
            continue
        for i, c in enumerate(soft):
            if c.topology_key != HOSTNAME:
                domains[i].setdefault(node.labels.get(c.topology_key, ""), 0)
    weights = [
        math.log(
            (len(feasible) - len(ignored) if c.topology_key == HOSTNAME else len(domains[i])) + 2
        )
        for i, c in enumerate(soft)
    ]
    namespace = namespace_of(pod)
    inclusion = _Inclusion(pod)
    for node in snapshot.nodes:
        if require_all and not _has_all_keys(node, soft):
            continue
        for i, c in enumerate(soft):
            if not inclusion.includes(c, node):
                continue
            value = node.labels.get(c.topology_key, "")
            if value in domains[i]:
                domains[i][value] += count_matching(node, c.selector, namespace)
    raw: dict[str, int] = {}
    for node in feasible:
        if node.name in ignored:
            continue
        total = 0.0
        for i, c in enumerate(soft):
            if c.topology_key not in node.labels:
                continue
            if c.topology_key == HOSTNAME:
                count = count_matching(node, c.selector, namespace)
            else:
                count = domains[i][node.labels[c.topology_key]]
            total += float(count) * weights[i] + float(c.max_skew - 1)
        raw[node.name] = go_round(total)
    return _normalize(raw, [n.name for n in feasible])


def _normalize(raw: dict[str, int], feasible: list[str]) -> dict[str, int]:
    """Ignored nodes score 0; the rest 100 * (max + min - s) / max (100 each when max is 0)."""
    if not raw:
        return {name: 0 for name in feasible}
    highest, lowest = max(raw.values()), min(raw.values())
    out = {}
    for name in feasible:
        if name not in raw:
            out[name] = 0
        elif highest == 0:
            out[name] = 100
        else:
            out[name] = 100 * (highest + lowest - raw[name]) // highest
    return out


# Its contribution to the per-node evaluator (``PodEvaluator``), loaded by its spec.
def _filter(evaluator: Any, pod: Pod) -> PodTopologySpread:
    return PodTopologySpread(pod, evaluator.snapshot, evaluator.profile.spread)


def _score(evaluator: Any, pod: Pod, feasible: list[NodeInfo]) -> dict[str, int] | None:
    return score(pod, evaluator.snapshot, feasible, evaluator.profile.spread)


PER_NODE = PerNode(filter=_filter, score=_score)
