"""TaintToleration's queueing hint: a node whose NoSchedule/NoExecute taints the pod now
tolerates (``untolerated_taint``, the Filter's own check)."""

from __future__ import annotations

from typing import Any

from kubesalvo.core.pernode.framework import untolerated_taint
from kubesalvo.core.pernode.hint_objects import api, node_info
from kubesalvo.core.plugins.framework import ClusterEvent, EventResource

__all__ = ["queueing_hint"]


def queueing_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """TaintToleration: a node whose NoSchedule/NoExecute taints the pod now tolerates."""
    if event.resource is not EventResource.NODE or new is None:
        return True
    api_pod = api(pod)
    if untolerated_taint(api_pod, node_info(new)) is not None:
        return False
    return old is None or untolerated_taint(api_pod, node_info(old)) is not None
