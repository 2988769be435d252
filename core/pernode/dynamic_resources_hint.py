"""DynamicResources' queueing hint: every claim a PreBind writes is a claim event, and
only some of them can help a pod waiting for devices."""

from __future__ import annotations

from typing import Any

from kubesalvo.core.dra.pod import claim_change_helps
from kubesalvo.core.pernode.hint_objects import api, to_api
from kubesalvo.core.plugins.framework import ClusterEvent, EventResource

__all__ = ["queueing_hint"]


def queueing_hint(pod: Any, event: ClusterEvent, old: Any, new: Any) -> bool:
    """A claim event helps when the claim is the pod's own and was made or changed
    status, or when any claim got deallocated (``core.dra.pod.claim_change_helps``); a
    pod event only for the pod itself (its claim named in its status). Class, slice and
    node events may bring devices: they always help."""
    if event.resource is EventResource.RESOURCE_CLAIM:
        return claim_change_helps(
            api(pod),
            None if old is None else to_api(old),
            None if new is None else to_api(new),
        )
    if event.resource is EventResource.POD:
        other = new if new is not None else old
        return other is None or api(other).get("metadata", {}).get("uid") == api(pod).get(
            "metadata", {}
        ).get("uid")
    return True
