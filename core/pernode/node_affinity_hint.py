"""NodeAffinity's queueing hint: a node that now matches the pod's nodeSelector and
required terms (``RequiredNodeAffinity``, the Filter's own check)."""

from __future__ import annotations

from typing import Any

from kubesalvo.core.pernode.hint_objects import ByIdentity, api, node_info
from kubesalvo.core.pernode.node_affinity import RequiredNodeAffinity
from kubesalvo.core.plugins.framework import ClusterEvent, EventResource

__all__ = ["queueing_hint"]

_required = ByIdentity(lambda pod: RequiredNodeAffinity(api(pod)), 65536)


def queueing_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """NodeAffinity: a node that now matches the pod's nodeSelector and required terms."""
    if event.resource is not EventResource.NODE or new is None:
        return True
    required = _required(pod)
    if not required.matches(node_info(new)):
        return False
    return old is None or not required.matches(node_info(old))
