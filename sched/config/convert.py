"""From the loader's typed args to the core's :class:`~kubesalvo.core.profile.Profile`.

The core keeps what the kernels read (filters in order, score weights, the args of the
scoring and filtering plugins). A few settings have no place there yet and stay only in
:class:`~kubesalvo.sched.config.model.ProfileConfig`: DefaultPreemption's args, the
per-constraint ``minDomains``/``nodeAffinityPolicy``/``nodeTaintsPolicy``/
``matchLabelKeys`` of PodTopologySpread's default constraints, and the plugins of the
other extension points.
"""

from __future__ import annotations

from typing import Any

from kubesalvo.core import profile as core
from kubesalvo.sched.config import args as cfg
from kubesalvo.sched.config.affinity import NodeAffinity, NodeSelectorTerm
from kubesalvo.sched.config.plugins import ResolvedPlugins

__all__ = ["core_profile", "node_affinity_to_api"]


def _term_to_api(term: NodeSelectorTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, reqs in (
        ("matchExpressions", term.match_expressions),
        ("matchFields", term.match_fields),
    ):
        if reqs:
            out[key] = [
                {
                    "key": r.key,
                    "operator": r.operator,
                    **({"values": list(r.values)} if r.values else {}),
                }
                for r in reqs
            ]
    return out


def node_affinity_to_api(affinity: NodeAffinity) -> dict[str, Any]:
    """The API (camelCase) shape of a node affinity, as a pod's spec would carry it."""
    out: dict[str, Any] = {}
    if affinity.required is not None:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_term_to_api(t) for t in affinity.required]
        }
    if affinity.preferred:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": p.weight, "preference": _term_to_api(p.preference)}
            for p in affinity.preferred
        ]
    return out


def _resources(specs: tuple[cfg.ResourceSpec, ...]) -> tuple[core.ResourceSpec, ...]:
    return tuple(core.ResourceSpec(s.name, s.weight) for s in specs)


def core_profile(
    scheduler_name: str, plugins: ResolvedPlugins, args: dict[str, cfg.PluginArgs]
) -> core.Profile:
    """Build the core profile; raises core.ProfileError if the core refuses a value."""
    kwargs: dict[str, Any] = {}
    fit = args.get("NodeResourcesFit")
    if isinstance(fit, cfg.NodeResourcesFitArgs):
        s = fit.scoring_strategy
        kwargs["fit"] = core.FitArgs(
            frozenset(fit.ignored_resources),
            frozenset(fit.ignored_resource_groups),
            core.ScoringStrategy(
                core.ScoringStrategyType(s.type),
                _resources(s.resources),
                tuple(core.ShapePoint(p.utilization, p.score) for p in s.shape),
            ),
        )
    balanced = args.get("NodeResourcesBalancedAllocation")
    if isinstance(balanced, cfg.NodeResourcesBalancedAllocationArgs):
        kwargs["balanced_allocation"] = core.BalancedAllocationArgs(_resources(balanced.resources))
    spread = args.get("PodTopologySpread")
    if isinstance(spread, cfg.PodTopologySpreadArgs):
        kwargs["spread"] = core.SpreadArgs(
            tuple(
                core.DefaultConstraint(c.max_skew, c.topology_key, c.when_unsatisfiable)
                for c in spread.default_constraints
            ),
            core.SpreadDefaulting(spread.defaulting_type),
        )
    ipa = args.get("InterPodAffinity")
    if isinstance(ipa, cfg.InterPodAffinityArgs):
        kwargs["inter_pod_affinity"] = core.InterPodAffinityArgs(
            ipa.hard_pod_affinity_weight, ipa.ignore_preferred_terms_of_existing_pods
        )
    na = args.get("NodeAffinity")
    if isinstance(na, cfg.NodeAffinityArgs) and na.added_affinity is not None:
        kwargs["node_affinity"] = core.NodeAffinityArgs(node_affinity_to_api(na.added_affinity))
    return core.Profile(
        scheduler_name=scheduler_name,
        filters=plugins.at("filter"),
        scores=plugins.score_weights,
        **kwargs,
    )
