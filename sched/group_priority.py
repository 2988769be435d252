"""GroupPriority's runtime half: one Warning event per pod whose groupPriority label is not
an integer (the queue sort itself is ``core/plugins/group_priority.py`` and the queue's).

Installed through the plugin handle (``sched/plugin_handle.py``) when a profile sorts its
queue by GroupPriority. A pod is looked at when it would be queued: pending, of one of
kubesalvo's profiles, not being deleted, and not already bound by us in flight.
"""

from __future__ import annotations

from kubesalvo.core.plugins import group_priority, names
from kubesalvo.sched.events import WARNING, ObjectRef
from kubesalvo.sched.informers import DELETED, SYNCED, Change
from kubesalvo.sched.informers.models import Pod
from kubesalvo.sched.plugin_handle import PluginHandle
from kubesalvo.sched.queue import pod_key

__all__ = ["install"]


def install(handle: PluginHandle) -> None:
    if not any(p.queue_sort == names.GROUP_PRIORITY for p in handle.config.profiles):
        return
    warned: set[str] = set()  # pods already warned about (by key), until deleted
    ours = handle.scheduler_names

    def on_pod(change: Change[Pod]) -> None:
        pod = change.obj
        if change.type == SYNCED or pod is None:
            return
        key = pod_key(pod)
        if change.type == DELETED:
            warned.discard(key)
            return
        if pod.spec.node_name or pod.spec.scheduler_name not in ours:
            return
        if pod.metadata.deletion_timestamp or handle.cache.is_assumed(key) or key in warned:
            return
        _, valid = group_priority.group_priority(pod.metadata.labels)
        if valid:
            return
        warned.add(key)
        meta = pod.metadata
        value = meta.labels.get(group_priority.GROUP_PRIORITY_LABEL, "")
        handle.recorder.event(
            ObjectRef(meta.namespace, meta.name, meta.uid),
            WARNING,
            "InvalidGroupPriority",
            "Scheduling",
            group_priority.invalid_priority_note(value),
            controller=pod.spec.scheduler_name,
        )

    handle.on_pod(on_pod)
