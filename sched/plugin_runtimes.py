"""The plugins' runtime halves, installed in this order through the plugin handle.

Each entry is an ``install(handle)`` (see ``sched/plugin_handle.py``) that does nothing
when its plugin is not enabled. The order is the order of their pod hooks and start steps:
QosAware files a pod before the gangs count it, as the runtime always did.
"""

from __future__ import annotations

from collections.abc import Callable

from kubesalvo.sched import gangs, group_priority, qos
from kubesalvo.sched.plugin_handle import PluginHandle

__all__ = ["INSTALLS"]

INSTALLS: tuple[Callable[[PluginHandle], None], ...] = (
    qos.install,
    gangs.install,
    group_priority.install,
)
