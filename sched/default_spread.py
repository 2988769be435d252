"""PodTopologySpread's runtime half: the workloads whose selectors default constraints take.

When a profile has default spread constraints (System defaulting has them unless turned
off), pods without constraints of their own get them with a selector taken from their
Services, ReplicationControllers, ReplicaSets and StatefulSets (``informers.workloads``).
``install`` watches those four kinds (their sync holds readiness: without them the first
bursts would spread by the wrong selectors) and publishes the ``Workloads`` table under
the plugin's name, where the cycle reads it. Without RBAC to list any of them it logs one
warning at start and drops all four: a partial set would give pods wrong selectors, and a
refused informer would keep the scheduler from ever being ready.
"""

from __future__ import annotations

import logging
from typing import Any

from kubesalvo.core.plugins.names import POD_TOPOLOGY_SPREAD
from kubesalvo.sched.client import ApiError
from kubesalvo.sched.informers.workloads import WORKLOAD_KINDS, Workloads
from kubesalvo.sched.plugin_handle import PluginHandle

__all__ = ["install", "workloads_of"]

log = logging.getLogger(__name__)


def install(handle: PluginHandle) -> None:
    if not any(p.core.spread.effective_constraints for p in handle.config.profiles):
        return
    workloads = Workloads()
    handle.live[POD_TOPOLOGY_SPREAD] = workloads
    informers = [
        handle.watch(resource, workloads.handler(kind), ready=True)
        for resource, kind in WORKLOAD_KINDS
    ]

    async def check_access() -> None:
        forbidden = []
        for informer in informers:
            try:
                await handle.client.request("GET", informer.resource.path, params={"limit": "1"})
            except ApiError as error:
                if error.status in (401, 403):
                    forbidden.append(informer.resource.plural)
            except Exception:
                # Transient trouble: the informers retry on their own.
                log.debug("probing %s failed", informer.resource.plural, exc_info=True)
        if not forbidden:
            return
        log.warning(
            "cannot list %s (RBAC): PodTopologySpread default constraints are off; grant "
            "list and watch on services, replicationcontrollers, replicasets and "
            "statefulsets to spread pods without constraints of their own",
            ", ".join(forbidden),
        )
        for informer in informers:
            handle.unwatch(informer)
        del handle.live[POD_TOPOLOGY_SPREAD]

    handle.before_start(check_access)


def workloads_of(handle: PluginHandle, namespaces: set[str]) -> list[dict[str, Any]]:
    """The workloads a burst's pods (of these namespaces) may belong to (none when no
    profile has default constraints, or their informers were refused)."""
    workloads: Workloads | None = handle.live.get(POD_TOPOLOGY_SPREAD)
    return [] if workloads is None else workloads.in_namespaces(namespaces)
