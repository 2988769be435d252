"""The volume plugins' runtime half: the storage watches and VolumeBinding's PreBind.

VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits decide from the
claims, volumes, classes and CSI objects (``core/volumes.py``); when a profile's filters
run any of them, ``install`` watches those kinds through the plugin handle (each holding
readiness back until it has synced: a decision must not go without them), files every
version in the cache, and hands the cluster events on to the queue, which wakes the pods
a volume plugin rejected.

When a profile runs VolumeBinding's PreBind, the volumes reserved for unbound
WaitForFirstConsumer claims are written and waited for (``sched/volume_prebind.py``), and
the encoder may then place such pods (``bind_delayed``).
"""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.volume_binding import VolumeBindingArgs
from kubesalvo.sched.informers.storage import STORAGE_RESOURCES, VOLUME_PLUGINS, storage_handler
from kubesalvo.sched.plugin_handle import PluginHandle
from kubesalvo.sched.volume_prebind import VolumePreBind

__all__ = ["install"]


def install(handle: PluginHandle) -> None:
    profiles = handle.config.profiles
    if any(VOLUME_PLUGINS.intersection(profile.core.filters) for profile in profiles):
        for resource in STORAGE_RESOURCES:
            handler = storage_handler(handle.cache, resource.plural, handle.queue.on_event)
            handle.watch(resource, handler, ready=True)
    for profile in profiles:
        if names.VOLUME_BINDING in profile.plugins.at("preBind"):
            args = profile.args.get(names.VOLUME_BINDING)
            if not isinstance(args, VolumeBindingArgs):
                args = VolumeBindingArgs()
            prebind = VolumePreBind(handle.cache, handle.client, args.bind_timeout_seconds)
            handle.add_pre_bind(prebind)
            handle.cache.state.storage.bind_delayed = True
            return
