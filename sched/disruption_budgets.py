"""DefaultPreemption's runtime half: the PodDisruptionBudgets its decisions read.

When a profile runs DefaultPreemption, ``install`` watches PodDisruptionBudgets (their
sync holds readiness: a decision without them could evict a protected pod) and publishes
the informer under the plugin's name; ``budgets`` lists what it holds for a decision.
Only the store is read, so the watch has no handler.
"""

from __future__ import annotations

from typing import Any

from kubesalvo.core.plugins.names import DEFAULT_PREEMPTION
from kubesalvo.sched.informers import PODDISRUPTIONBUDGETS
from kubesalvo.sched.plugin_handle import PluginHandle

__all__ = ["budgets", "install"]


def install(handle: PluginHandle) -> None:
    if any(profile.preemption is not None for profile in handle.config.profiles):
        handle.live[DEFAULT_PREEMPTION] = handle.watch(PODDISRUPTIONBUDGETS, ready=True)


def budgets(handle: PluginHandle) -> list[Any]:
    """The PodDisruptionBudgets as the informer holds them now (none without preemption)."""
    informer = handle.live.get(DEFAULT_PREEMPTION)
    return [] if informer is None else list(informer.store.values())
