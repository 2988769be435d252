"""NodeUnschedulable's queueing hint: a node that is (now) not cordoned, or a pod that
tolerates cordons."""

from __future__ import annotations

from typing import Any

from kubesalvo.core.pernode.framework import tolerated
from kubesalvo.core.pernode.hint_objects import api, node_info
from kubesalvo.core.pernode.node_unschedulable import UNSCHEDULABLE_TAINT
from kubesalvo.core.plugins.framework import ClusterEvent, EventResource

__all__ = ["queueing_hint"]


def queueing_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """NodeUnschedulable: a node that is (now) not cordoned, or a pod tolerating cordons."""
    if event.resource is not EventResource.NODE or new is None:
        return True
    tolerations = list((api(pod).get("spec") or {}).get("tolerations") or ())
    if tolerated(tolerations, UNSCHEDULABLE_TAINT):
        return True
    if node_info(new).unschedulable:
        return False
    return old is None or node_info(old).unschedulable
