"""``/configz``: the effective configuration, in the shape kube-scheduler serves it.

kube-scheduler answers ``/configz`` on its secure port (behind the port's delegated
authentication and authorization, so RBAC's ``nonResourceURLs: ["/configz"]`` lets a
caller in) with ``{"componentconfig": {...}}``: its internal configuration type encoded
as JSON, which has Go's field names (``Parallelism``, ``LeaderElection``, ...) and
durations written as Go writes them ("15s", "1m30s"). Tools that read upstream's page
read this one: the same top-level fields, with the values kubesalvo runs with after
defaulting. ``Kubesalvo`` adds kubesalvo's own settings (burst cycle and queue).

Each profile gives its ``SchedulerName``, ``PercentageOfNodesToScore``, ``Plugins``:
every extension point's set after upstream's defaulting (the default plugins under
``MultiPoint``, each point's own ``Enabled``/``Disabled`` merged in; ``null`` for an empty
list, a weight not given is 0), as kube-scheduler lists them, and ``PluginConfig``: the
args of the entries the file gave, in its order, then the defaults of every other enabled
plugin that takes args, by name, as upstream's defaulting appends them. Args use Go's
field names (``MinCandidateNodesPercentage``), durations as Go writes them, and the API
types they embed (NodeAffinity's ``AddedAffinity``, PodTopologySpread's
``DefaultConstraints``) in the API's own JSON; a list never set is ``null``. kubesalvo's
own plugins' args follow the same rule (their field names, capitalised).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from enum import Enum
from typing import Any

from aiohttp import web

from kubesalvo.core.plugins.balanced_allocation import NodeResourcesBalancedAllocationArgs
from kubesalvo.core.plugins.dynamic_resources import DynamicResourcesArgs
from kubesalvo.core.plugins.framework import ResourceSpec
from kubesalvo.core.plugins.node_resources_fit import NodeResourcesFitArgs, ScoringStrategyType
from kubesalvo.core.plugins.pod_topology_spread import DefaultConstraint, PodTopologySpreadArgs
from kubesalvo.core.plugins.volume_binding import VolumeBindingArgs
from kubesalvo.sched.config import SchedulerConfig

API_VERSION = "kubescheduler.config.k8s.io/v1"
PATH = "/configz"


def go_duration(seconds: float) -> str:
    """``seconds`` as Go's time.Duration.String() writes it: "15s", "1m30s", "10ms"."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    nanos = round(abs(seconds) * 1e9)
    if nanos < 1_000_000_000:
        # Below one second Go picks the largest unit that keeps an integer part.
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return sign + _decimal(nanos, size) + unit
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _decimal(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _decimal(value: int, size: int) -> str:
    whole, fraction = divmod(value, size)
    if not fraction:
        return str(whole)
    digits = str(fraction).rjust(len(str(size)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def componentconfig(config: SchedulerConfig) -> dict[str, Any]:
    """The configuration as kube-scheduler's /configz lists it, under its Go field names."""
    election = config.leader_election
    client = config.client_connection
    return {
        "apiVersion": API_VERSION,
        "Parallelism": config.parallelism,
        "LeaderElection": {
            "LeaderElect": election.leader_elect,
            "LeaseDuration": go_duration(election.lease_duration_seconds),
            "RenewDeadline": go_duration(election.renew_deadline_seconds),
            "RetryPeriod": go_duration(election.retry_period_seconds),
            "ResourceLock": election.resource_lock,
            "ResourceName": election.resource_name,
            "ResourceNamespace": election.resource_namespace,
        },
        "ClientConnection": {
            "Kubeconfig": client.kubeconfig,
            "AcceptContentTypes": client.accept_content_types,
            "ContentType": client.content_type,
            "QPS": client.qps,
            "Burst": client.burst,
        },
        "EnableProfiling": config.enable_profiling,
        "EnableContentionProfiling": config.enable_contention_profiling,
        # Upstream defaults an unset value to 0 (adaptive), and writes it so.
        "PercentageOfNodesToScore": config.percentage_of_nodes_to_score or 0,
        "PodInitialBackoffSeconds": config.pod_initial_backoff_seconds,
        "PodMaxBackoffSeconds": config.pod_max_backoff_seconds,
        "Profiles": [
            {
                "SchedulerName": profile.scheduler_name,
                "PercentageOfNodesToScore": profile.percentage_of_nodes_to_score,
                "Plugins": _plugins(profile.plugins.merged),
                "PluginConfig": [
                    {"Name": name, "Args": go_args(args)} for name, args in profile.args.items()
                ]
                or None,
            }
            for profile in config.profiles
        ],
        # kubesalvo has no HTTP extenders of its own (its extender serves kube-scheduler).
        "Extenders": None,
        "DelayCacheUntilActive": config.delay_cache_until_active,
        "Kubesalvo": {
            "MaxBurstPods": config.kubesalvo.max_burst_pods,
            "BurstGatheringWindow": go_duration(config.kubesalvo.burst_gathering_window_seconds),
            "PodMaxInUnschedulablePodsDuration": go_duration(
                config.kubesalvo.pod_max_in_unschedulable_pods_seconds
            ),
        },
    }


def _plugins(
    merged: tuple[tuple[str, tuple[tuple[str, int], ...], tuple[str, ...]], ...],
) -> dict[str, Any]:
    """A profile's plugin sets under Go's names ("PreEnqueue", ..., "MultiPoint")."""
    out: dict[str, Any] = {}
    for point, enabled, disabled in merged:
        out[point[0].upper() + point[1:]] = {
            "Enabled": [{"Name": n, "Weight": w} for n, w in enabled] or None,
            "Disabled": [{"Name": n, "Weight": 0} for n in disabled] or None,
        }
    return out


def go_args(args: Any) -> dict[str, Any]:
    """A plugin's args as kube-scheduler's /configz writes them (see the docstring)."""
    if isinstance(args, NodeResourcesFitArgs):
        strategy = args.scoring_strategy
        ratio = None
        if strategy.type is ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO:
            shape = [{"Utilization": p.utilization, "Score": p.score} for p in strategy.shape]
            ratio = {"Shape": shape or None}
        return {
            "IgnoredResources": list(args.ignored_resources) or None,
            "IgnoredResourceGroups": list(args.ignored_resource_groups) or None,
            "ScoringStrategy": {
                "Type": strategy.type.value,
                "Resources": _resources(strategy.resources),
                "RequestedToCapacityRatio": ratio,
            },
        }
    if isinstance(args, NodeResourcesBalancedAllocationArgs):
        return {"Resources": _resources(args.resources)}
    if isinstance(args, PodTopologySpreadArgs):
        return {
            "DefaultConstraints": [_constraint(c) for c in args.default_constraints] or None,
            "DefaultingType": args.defaulting_type.value,
        }
    if isinstance(args, DynamicResourcesArgs):
        return {"FilterTimeout": go_duration(args.filter_timeout_seconds)}
    if isinstance(args, VolumeBindingArgs):
        # Shape is set only with the StorageCapacityScoring gate on (else nil upstream).
        shape = [{"Utilization": p.utilization, "Score": p.score} for p in args.shape]
        return {"BindTimeoutSeconds": args.bind_timeout_seconds, "Shape": shape or None}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(args):
        name = "".join(part[:1].upper() + part[1:] for part in f.name.split("_"))
        out[name] = _go_value(getattr(args, f.name))
    return out


def _go_value(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return dict(value) or None
    if isinstance(value, (tuple, list, frozenset, set)):
        items = sorted(value) if isinstance(value, (frozenset, set)) else list(value)
        return [_go_value(v) for v in items] or None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return go_args(value)
    return value


def _resources(resources: tuple[ResourceSpec, ...]) -> list[dict[str, Any]] | None:
    return [{"Name": r.name, "Weight": r.weight} for r in resources] or None


def _constraint(constraint: DefaultConstraint) -> dict[str, Any]:
    """A default constraint as the API's TopologySpreadConstraint JSON (its own tags)."""
    out: dict[str, Any] = {
        "maxSkew": constraint.max_skew,
        "topologyKey": constraint.topology_key,
        "whenUnsatisfiable": constraint.when_unsatisfiable,
    }
    if constraint.min_domains is not None:
        out["minDomains"] = constraint.min_domains
    if constraint.node_affinity_policy is not None:
        out["nodeAffinityPolicy"] = constraint.node_affinity_policy
    if constraint.node_taints_policy is not None:
        out["nodeTaintsPolicy"] = constraint.node_taints_policy
    if constraint.match_label_keys:
        out["matchLabelKeys"] = list(constraint.match_label_keys)
    return out


def add_configz(app: web.Application, config: SchedulerConfig) -> None:
    """Serve ``/configz`` from ``app`` (the secure port's, so its authorization applies)."""
    body = json.dumps({"componentconfig": componentconfig(config)}).encode()

    async def configz(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    app.router.add_get(PATH, configz)
