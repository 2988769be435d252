"""PreBind: what a plugin writes to the API server before a placed pod is bound.

kube-scheduler's binding cycle runs the PreBind plugins after the pod was assumed and
before its Binding is POSTed: VolumeBinding binds the pod's claims to the volumes chosen
for the node and waits for the PV controller, DynamicResources writes the allocation and
reservation of the pod's resource claims. A plugin's runtime half takes part through a
:class:`PreBindPlugin` handed to ``BindingCycle.add_pre_bind``:

* ``wants(qp, node)``: whether the pod needs this plugin's PreBind at all (a cheap look at
  what the plugin reserved in the burst); most pods need none, and they are bound as
  before, with nothing awaited;
* ``pre_bind(qp, node)``: the writes, awaited before the binding POST, outside the
  binder's in-flight bound, so that a PreBind waiting minutes for a volume never holds
  back other pods' binds. It raises :class:`PreBindRejected` when the pod cannot go to
  the node after all (kube-scheduler's Unschedulable status: the message alone is the
  pod's FailedScheduling text, and the plugin is the one that rejected it), or any other
  exception for an error (the text is ``running PreBind plugin "<name>": <error>``, as
  upstream's);
* ``unreserve(qp, node)``: called for every plugin that wanted the pod, in reverse order,
  when its bind does not end BOUND (PreBind failed, the bind was refused, the pod went
  away), so that what the plugin reserved for it is freed - upstream's Unreserve.

The plugins run in the order they were added (the profile's preBind order).
"""

from __future__ import annotations

from typing import Protocol

from kubesalvo.sched.queue import QueuedPod

__all__ = ["PreBindError", "PreBindPlugin", "PreBindRejected", "pre_bind_text"]


class PreBindPlugin(Protocol):
    """A plugin's PreBind, with its Unreserve (see the module's docstring)."""

    name: str

    def wants(self, qp: QueuedPod, node: str) -> bool: ...

    async def pre_bind(self, qp: QueuedPod, node: str) -> None: ...

    def unreserve(self, qp: QueuedPod, node: str) -> None: ...


class PreBindRejected(Exception):
    """The plugin rejects the pod on this node: its message is the pod's whole text."""


class PreBindError(Exception):
    """A PreBind plugin failed: ``plugin`` names it, ``cause`` is what it raised.

    The binder settles the bind FAILED with this as its error, without a binding POST."""

    def __init__(self, plugin: str, cause: BaseException) -> None:
        super().__init__(pre_bind_text(plugin, cause))
        self.plugin = plugin
        self.cause = cause

    @property
    def rejected(self) -> bool:
        """The plugin rejected the pod (Unschedulable) rather than failing with an error."""
        return isinstance(self.cause, PreBindRejected)


def pre_bind_text(plugin: str, cause: BaseException) -> str:
    """The FailedScheduling text of a failed PreBind, as kube-scheduler words it."""
    if isinstance(cause, PreBindRejected):
        return str(cause)
    return f'running PreBind plugin "{plugin}": {cause}'
