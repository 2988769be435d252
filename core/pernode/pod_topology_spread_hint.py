"""PodTopologySpread's queueing hint: a change in the counts of pods the constraints
select, or a node that carries every topology key (or lost or changed them). Every bind
is a pod event, so this hint is asked often."""

from __future__ import annotations

from typing import Any

from kubesalvo.core.pernode.framework import PodInvalid, SchedulingError
from kubesalvo.core.pernode.hint_objects import ByIdentity, api, node_info, spec_of
from kubesalvo.core.pernode.pod_topology_spread import Constraint, constraints
from kubesalvo.core.pernode.snapshot import labels_of, namespace_of
from kubesalvo.core.plugins.framework import ClusterEvent, EventResource
from kubesalvo.core.plugins.pod_topology_spread import PodTopologySpreadArgs, SpreadDefaulting

__all__ = ["queueing_hint"]

_NO_DEFAULTS = PodTopologySpreadArgs(defaulting_type=SpreadDefaulting.LIST)


def _hard_constraints(pod: Any) -> list[Constraint] | None:
    """The pod's own DoNotSchedule constraints; None when it has none of its own (the
    profile's defaults, which a hint cannot see, may have rejected it)."""
    found = api(pod)
    if not (found.get("spec") or {}).get("topologySpreadConstraints"):
        return None
    try:
        # No snapshot is needed: with own constraints the defaults are never consulted.
        hard = constraints(found, None, _NO_DEFAULTS, "DoNotSchedule")
    except (PodInvalid, SchedulingError):  # its attempt reports the invalid constraint
        return None
    return hard or None


_constraints = ByIdentity(_hard_constraints, 65536)


def _selected(cs: list[Constraint], other: Any) -> bool:
    return any(c.selector.matches(labels_of(api(other))) for c in cs)


def _has_keys(cs: list[Constraint], node: Any) -> bool:
    node_labels = node_info(node).labels
    return all(c.topology_key in node_labels for c in cs)


def queueing_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """PodTopologySpread: a change in the counts of pods the constraints select, or a
    node that carries every topology key (or lost or changed them)."""
    cs = _constraints(pod)
    if cs is None:
        return True
    if event.resource is EventResource.POD:
        target = api(pod)
        for o in (old, new):
            if o is None:
                continue
            found = api(o)
            same_pod = (found.get("metadata") or {}).get("uid") == (
                target.get("metadata") or {}
            ).get("uid")
            involved = same_pod or (
                bool(spec_of(o).get("nodeName")) and namespace_of(found) == namespace_of(target)
            )
            if not involved:
                return False
        if old is not None and new is not None:
            if spec_of(old).get("tolerations") != spec_of(new).get("tolerations") and any(
                c.honor_node_taints for c in cs
            ):
                return True
            return any(
                c.selector.matches(labels_of(api(old))) != c.selector.matches(labels_of(api(new)))
                for c in cs
            )
        changed = new if new is not None else old
        return changed is None or _selected(cs, changed)
    if event.resource is not EventResource.NODE:
        return True
    if old is not None and new is not None:
        was, now = _has_keys(cs, old), _has_keys(cs, new)
        if was != now:
            return True
        if not now:
            return False
        before, after = node_info(old), node_info(new)
        keys_changed = any(
            before.labels.get(c.topology_key) != after.labels.get(c.topology_key) for c in cs
        )
        return keys_changed or before.taints != after.taints
    changed = new if new is not None else old
    return changed is None or _has_keys(cs, changed)
