"""Cluster events of the informers' objects, and the plugins they may help.

The events themselves (:class:`ClusterEvent`, action bits, the fixed events such as
``NODE_ADD``) and each plugin's registrations (``EVENTS`` in its module, collected in
the registry's ``PLUGIN_EVENTS``) are pure data in ``core/plugins``. The queue parks an
unschedulable pod together with the plugins that rejected it and moves it back only on
an event one of those plugins registered; kube-scheduler also runs a per-plugin hint
function on each matching event to skip events that cannot help (the plugin's
``queueing_hint``, gathered by ``registry.queueing_hints``), and a plugin without one is
retried on every matching event.

``node_update_events`` and ``pod_update_events`` derive the events of an update from the
old and new objects (the informers' typed models), as ``framework/events.go`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from kubesalvo.core.pernode.hint_objects import PodForm
from kubesalvo.core.plugins.framework import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    FORCE_ACTIVATE,
    NODE_ADD,
    NODE_DELETE,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    EventResource,
    HintFn,
    event_label,
)
from kubesalvo.core.plugins.registry import PLUGIN_EVENTS
from kubesalvo.core.resources import pod_requests

__all__ = [
    "ASSIGNED_POD_ADD",
    "ASSIGNED_POD_DELETE",
    "FORCE_ACTIVATE",
    "NODE_ADD",
    "NODE_DELETE",
    "PLUGIN_EVENTS",
    "UNSCHEDULABLE_TIMEOUT",
    "ActionType",
    "ClusterEvent",
    "EventResource",
    "HintFn",
    "node_update_events",
    "plugins_interested",
    "pod_update_events",
]

A = ActionType
R = EventResource


def plugins_interested(
    event: ClusterEvent, plugins: Iterable[str], registry: Mapping[str, tuple[ClusterEvent, ...]]
) -> list[str]:
    """The plugins among ``plugins`` that registered an event matching ``event``."""
    return [p for p in plugins if any(event.matches(r) for r in registry.get(p, ()))]


def _conditions(node: Any) -> list[tuple[str, str]]:
    # A heartbeat alone changes nothing a plugin decides on (upstream drops it too).
    return [(c.type, c.status) for c in node.status.conditions]


def node_update_events(old: Any, new: Any) -> list[ClusterEvent]:
    """The events of a node update (informers' ``Node`` models); empty if nothing counts."""
    action = A(0)
    if old.spec.unschedulable != new.spec.unschedulable or old.spec.taints != new.spec.taints:
        action |= A.UPDATE_NODE_TAINT
    if old.status.allocatable != new.status.allocatable:
        action |= A.UPDATE_NODE_ALLOCATABLE
    if old.metadata.labels != new.metadata.labels:
        action |= A.UPDATE_NODE_LABEL
    if _conditions(old) != _conditions(new):
        action |= A.UPDATE_NODE_CONDITION
    if old.metadata.annotations != new.metadata.annotations:
        action |= A.UPDATE_NODE_ANNOTATION
    return [ClusterEvent(R.NODE, a, event_label(R.NODE, a)) for a in A if a in action]


def _scaled_down(old: Any, new: Any, api: PodForm | None) -> bool:
    if old.spec == new.spec:
        return False  # requests are read from the spec alone (most updates are status)
    try:
        convert = api or msgspec.to_builtins
        before = pod_requests(convert(old))
        after = pod_requests(convert(new))
    except ValueError:
        return False  # a quantity beyond int64 (the API server stores 1e400): no scale-down
    return any(after.get(name, 0) < amount for name, amount in before.items())


def pod_update_events(old: Any, new: Any, api: PodForm | None = None) -> list[ClusterEvent]:
    """The events of a pod update (informers' ``Pod`` models); ``api`` gives a pod's API
    dict for its requests (the runtime's memo, so that no version is converted twice;
    None: converted here).

    Status-only changes give none; a change the finer bits do not name gives
    ``UPDATE_OTHER``, which matches no plugin's registration but is still reported.
    """
    action = A(0)
    if old.metadata.labels != new.metadata.labels:
        action |= A.UPDATE_POD_LABEL
    if _scaled_down(old, new, api):
        action |= A.UPDATE_POD_SCALE_DOWN
    if old.spec.scheduling_gates and not new.spec.scheduling_gates:
        action |= A.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    if old.spec.tolerations != new.spec.tolerations:
        action |= A.UPDATE_POD_TOLERATION
    if old.status.resource_claim_statuses != new.status.resource_claim_statuses:
        # the resourceclaim controller made (and named) a claim of the pod's templates
        action |= A.UPDATE_POD_GENERATED_RESOURCE_CLAIM
    if not action and (
        old.spec != new.spec or old.metadata.annotations != new.metadata.annotations
    ):
        action = A.UPDATE_OTHER
    return [ClusterEvent(R.POD, a, event_label(R.POD, a)) for a in A if a in action]
