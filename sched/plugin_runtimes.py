"""The plugins' runtime halves, installed in this order through the plugin handle.

Each entry is an ``install(handle)`` (see ``sched/plugin_handle.py``) that does nothing
when its plugin is not enabled. The order is the order of their watches, pod hooks and
start steps, as the runtime always had them: the storage and device objects are watched
first, the workloads' access is probed next, and QosAware files a pod before the gangs
count it.
"""

from __future__ import annotations

from collections.abc import Callable

from kubesalvo.sched import (
    default_spread,
    devices,
    disruption_budgets,
    gangs,
    group_priority,
    qos,
    volumes,
)
from kubesalvo.sched.plugin_handle import PluginHandle

__all__ = ["INSTALLS"]

INSTALLS: tuple[Callable[[PluginHandle], None], ...] = (
    volumes.install,
    devices.install,
    default_spread.install,
    disruption_budgets.install,
    qos.install,
    gangs.install,
    group_priority.install,
)
