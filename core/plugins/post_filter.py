"""The PostFilter part of a FailedScheduling text, from the profile's postFilter plugins.

kube-scheduler's RunPostFilterPlugins (v1.34) runs them in order: each that answers
Unschedulable adds its reasons; the first that succeeds ends the run, and its empty
message is the whole post-filter part.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubesalvo.core.plugins import default_preemption, dynamic_resources
from kubesalvo.core.plugins.framework import CYCLE_STATE_NOT_FOUND, post_filter_message

__all__ = ["post_filter_text"]


def post_filter_text(
    post_filters: Sequence[str],
    *,
    has_claims: bool = False,
    preemption: str | None = None,
    dynamic_resources_state: bool = True,
) -> str:
    """The post-filter part for a profile's postFilter plugins in their run order.

    DynamicResources (in the default profile before DefaultPreemption since
    DynamicResourceAllocation went GA) answers "no new claims to deallocate" for a pod
    without resource claims in its state (none, or its PreFilter rejected it), and "still
    not schedulable" for one with claims: upstream would deallocate an allocated claim
    unavailable on the nodes that nobody else holds, which kubesalvo does not do. ``preemption`` is
    DefaultPreemption's message ("" when it chose a node, None when it did not run for
    the pod). ``dynamic_resources_state`` False: its PreFilter never ran (see
    CYCLE_STATE_NOT_FOUND).
    """
    reasons: list[str] = []
    for plugin in post_filters:
        if plugin == dynamic_resources.NAME and not dynamic_resources_state:
            return CYCLE_STATE_NOT_FOUND
        if plugin == dynamic_resources.NAME:
            reasons.append(
                dynamic_resources.STILL_NOT_SCHEDULABLE
                if has_claims
                else dynamic_resources.NO_NEW_CLAIMS_TO_DEALLOCATE
            )
        elif plugin == default_preemption.NAME and preemption is not None:
            if not preemption:
                return ""
            reasons.append(preemption)
    return post_filter_message(*reasons)
