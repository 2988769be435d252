"""Each node's filter verdict and per-plugin score for one pod: the web view's node table.

The burst kernel reports a pod's chosen node, its total score and the failure reasons
counted over the nodes; it keeps no per-node detail. As ``explain`` does for the top
nodes, the table is worked out by ``kubesalvo.core.pernode`` (kube-scheduler's plugins
written plainly) for this one pod against the cluster as it is now, the pod itself left
out, so it may differ from what the burst saw. It runs in a worker thread (the
per-node evaluator is plain Python) and is bounded: the best feasible nodes, the chosen node
always, and for a pending pod the infeasible nodes that came closest, each with the
filter's reasons and the resources it is short of.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubesalvo.core.pernode.evaluator import PodEvaluator
from kubesalvo.core.pernode.framework import PodInvalid, Status
from kubesalvo.core.pernode.node_affinity import RequiredNodeAffinity
from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.plugins.framework import Code
from kubesalvo.core.resources import pod_requests

__all__ = ["CLOSEST_ROWS", "FEASIBLE_ROWS", "node_table"]

# Enough rows to sort and compare; a table of 5,000 nodes helps nobody and costs the
# browser. The counts of everything left out are given.
FEASIBLE_ROWS = 100
CLOSEST_ROWS = 20


def node_table(
    pod: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    namespaces: Sequence[Mapping[str, Any]],
    profile: Any,
    chosen: str | None = None,
    workloads: Sequence[Mapping[str, Any]] = (),
    storage: Any = None,
    devices: Any = None,
) -> dict[str, Any]:
    """The node table of ``pod`` (see the module docstring); ``chosen``: its node;
    ``storage`` (core/volumes.StorageObjects): what the volume filters read; ``devices``
    (core/dra/pod.PodDevices): its claims' DynamicResources cycle state, which that
    plugin's Filter and Score read as in the burst (without it, a pod with claims is not
    evaluated)."""
    uid = (pod.get("metadata") or {}).get("uid")
    others = [p for p in pods if (p.get("metadata") or {}).get("uid") != uid]
    unbound = {**pod, "spec": {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}}
    evaluator = PodEvaluator(nodes, others, namespaces, profile, workloads)
    if storage is not None:
        evaluator.storage = storage
    if devices is not None:
        evaluator.devices[uid or ""] = devices
    try:
        outcome = evaluator.evaluate(unbound)
        scores = evaluator.scores_for(unbound, outcome.feasible)
    except PodInvalid as error:
        return {"error": f"the per-node evaluator cannot evaluate this pod: {error}", "rows": []}
    plugins = [name for name, _ in profile.scores]
    ranked = sorted(scores.items(), key=lambda item: (-sum(item[1].values()), item[0]))
    rows = [_feasible_row(name, by_plugin, chosen) for name, by_plugin in ranked[:FEASIBLE_ROWS]]
    if chosen is not None and chosen in scores and all(r["node"] != chosen for r in rows):
        rows.append(_feasible_row(chosen, scores[chosen], chosen))
    request = pod_requests(unbound)
    infeasible = [(name, status) for name, status in outcome.statuses.items() if status is not None]
    # The pod's own nodeSelector and required node affinity, asked of every node whatever
    # filter rejected it first (a taint, say, comes before NodeAffinity).
    selected = RequiredNodeAffinity(unbound).matches
    by_name = evaluator.snapshot.by_name
    closest = sorted(
        infeasible,
        key=lambda item: _distance(
            item[1], by_name[item[0]], request, not selected(by_name[item[0]])
        ),
    )
    shown = closest[:CLOSEST_ROWS]
    if chosen is not None and chosen not in scores and all(n != chosen for n, _ in shown):
        # The evaluator now rejects the node the pod got (the cluster moved): show why.
        shown += [(n, s) for n, s in infeasible if n == chosen]
    for name, status in shown:
        info = evaluator.snapshot.by_name[name]
        rows.append(
            {
                "node": name,
                "feasible": False,
                "chosen": name == chosen,
                "reasons": list(status.reasons),
                "unresolvable": status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                "lacks": _lacks(info, request),
            }
        )
    return {
        "nodes": len(outcome.statuses),
        "feasible": len(scores),
        "infeasible": len(infeasible),
        "plugins": plugins,
        "prefilterMessage": outcome.prefilter_message,
        "reasons": outcome.reason_counts(),
        "rows": rows,
    }


def _feasible_row(name: str, by_plugin: Mapping[str, int], chosen: str | None) -> dict[str, Any]:
    return {
        "node": name,
        "feasible": True,
        "chosen": name == chosen,
        "total": sum(by_plugin.values()),
        "plugins": dict(by_plugin),
    }


def _shortfalls(info: NodeInfo, request: Mapping[str, int]) -> dict[str, int]:
    """Per resource the pod asks for: how much more the node would need free."""
    out = {}
    for name, wanted in request.items():
        if wanted <= 0:
            continue
        free = info.allocatable.get(name, 0) - info.requested.get(name, 0)
        if wanted > free:
            out[name] = wanted - max(free, 0)
    return out


def _amount(name: str, amount: int) -> str:
    """A quantity as people write it: the scheduler counts cpu in millicores, memory and
    storage in bytes, anything else in units."""
    if name == "cpu":
        return f"{amount}m"
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        for unit, size in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if amount >= size and amount % size == 0:
                return f"{amount // size}{unit}"
        return f"{amount}"
    return str(amount)


def _lacks(info: NodeInfo, request: Mapping[str, int]) -> list[str]:
    """What the node lacks, in words: each resource it is short of, and a full pod count."""
    short = sorted(_shortfalls(info, request).items())
    out = [f"{name}: {_amount(name, amount)} short" for name, amount in short]
    if len(info.pods) + 1 > info.allocatable.get("pods", 0):
        out.append(f"pods: {len(info.pods)} of {info.allocatable.get('pods', 0)} used")
    return out


def _distance(
    status: Status, info: NodeInfo, request: Mapping[str, int], ruled_out: bool
) -> tuple[Any, ...]:
    """How far a node is from taking the pod: nodes no preemption or change of load can
    help come last, and last among them the nodes the pod's own selector rules out
    (``ruled_out``: in a cluster of many pools, a pod's node selector leaves most nodes
    out, none of them close); then by the number of reasons, then by the share of its
    allocatable each missing resource amounts to (summed)."""
    short = _shortfalls(info, request)
    share = sum(amount / max(info.allocatable.get(name, 0), 1) for name, amount in short.items())
    return (
        status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ruled_out,
        len(status.reasons),
        share,
        info.name,
    )
