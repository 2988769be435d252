"""Coscheduling (kubesalvo): a pod group (gang) is placed all together or not at all.

Membership and the minimum come from ``gang.py`` in this package (the labels ``podGroup`` +
``minAvailable``, or ``scheduling.x-k8s.io/pod-group`` naming a PodGroup object whose
``minMember`` wins). Three stages, each with its own text:

* **PreFilter** (:func:`check_gang`): while fewer than the minimum members exist (pending
  and not gated, or already bound), no member is tried: each gets an
  UnschedulableAndUnresolvable failure "less than minAvailable" and waits in the queue,
  holding no room. When the gang has waited longer than its timeout
  (``permitWaitingTimeSeconds``, or the PodGroup's ``scheduleTimeoutSeconds``, which wins)
  it is rejected with its own text and its members back off; they keep coming back, and
  the member that completes the gang brings them all into one burst.
* **Permit**, in the kernel: the members of a burst are placed together; when fewer than
  the minimum (less the members already bound) fit, every one of them is rolled back
  (:data:`ERR_REASON_GANG_MIN_AVAILABLE`), so two gangs competing for the same room never
  end up both half-placed.
* a PodGroup's ``minResources``: the gang is not tried while the free room of all nodes
  together is less than it (:func:`short_of`).

Args (``CoschedulingArgs``): ``permitWaitingTimeSeconds`` (default 60) and
``podGroupBackoffSeconds`` (default 0: the queue's own backoff; more: a rejected gang is not
tried again before that many seconds).

The runtime half (the gangs the scheduler knows, the PodGroup watch and status writes) is
``sched/gangs.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.coscheduling import hint
from kubesalvo.core.plugins.framework import (
    PERMIT,
    PRE_FILTER,
    ActionType,
    ClusterEvent,
    Code,
    ErrorKind,
    EventResource,
    FieldError,
    PluginSpec,
    check,
)

__all__ = [
    "ERR_REASON_GANG_MIN_AVAILABLE",
    "ERR_REASON_LESS_THAN_MIN_AVAILABLE",
    "ERR_REASON_MIN_RESOURCES",
    "ERR_REASON_TIMED_OUT",
    "NAME",
    "CoschedulingArgs",
    "GangCheck",
    "Verdict",
    "check_gang",
    "gang_reason",
    "short_of",
]

NAME = names.COSCHEDULING
# The gang could not reach its minimum, so none of it was placed.
ERR_REASON_GANG_MIN_AVAILABLE = "pod group could not reach its minAvailable"
# Fewer members exist than the minimum: nothing is tried.
ERR_REASON_LESS_THAN_MIN_AVAILABLE = "pod group has less than minAvailable members"
# The members did not arrive within the timeout: the gang is rejected and backs off.
ERR_REASON_TIMED_OUT = "pod group timed out waiting for minAvailable members"
# The nodes' free room together is less than the PodGroup's minResources.
ERR_REASON_MIN_RESOURCES = "pod group's minResources exceed the free room of the cluster"


@dataclass(frozen=True)
class CoschedulingArgs:
    """CoschedulingArgs, as scheduler-plugins names them."""

    permit_waiting_time_seconds: int = 60
    pod_group_backoff_seconds: int = 0

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        found = []
        if self.permit_waiting_time_seconds < 1:
            found.append(
                FieldError(
                    "permitWaitingTimeSeconds",
                    ErrorKind.INVALID,
                    self.permit_waiting_time_seconds,
                    "must be at least 1",
                )
            )
        if self.pod_group_backoff_seconds < 0:
            found.append(
                FieldError(
                    "podGroupBackoffSeconds",
                    ErrorKind.INVALID,
                    self.pod_group_backoff_seconds,
                    "must not be negative",
                )
            )
        return found


def gang_reason(group: str, placed: int, minimum: int) -> str:
    """Why a gang's pods were taken back: used as the PreFilter-style part of the message."""
    return f"{ERR_REASON_GANG_MIN_AVAILABLE} ({group}: {placed} of {minimum} placed)"


class Verdict(Enum):
    PLACE = "place"
    WAIT = "wait"
    TIMED_OUT = "timed out"
    SHORT = "short of minResources"


@dataclass(frozen=True)
class GangCheck:
    """What the PreFilter knows of one gang when a burst holds some of its members."""

    group: str  # namespace/name
    minimum: int
    pending: int  # members waiting in the queue (gated ones excluded)
    bound: int  # members bound or being bound
    waited: float  # seconds since its members started waiting (0: they did not)
    timeout: float  # seconds it may wait

    @property
    def exist(self) -> int:
        return self.pending + self.bound

    @property
    def needed(self) -> int:
        """How many of the pending members the kernel must place for any to stay."""
        return max(0, self.minimum - self.bound)


def check_gang(gang: GangCheck) -> tuple[Verdict, str]:
    """The PreFilter's verdict on a gang, with the text its members get when not placed."""
    if gang.exist >= gang.minimum:
        return Verdict.PLACE, ""
    if gang.waited >= gang.timeout:
        return Verdict.TIMED_OUT, (
            f"{ERR_REASON_TIMED_OUT} ({gang.group}: {gang.exist} of {gang.minimum} exist "
            f"after {gang.waited:.0f}s, timeout {gang.timeout:.0f}s); backing off"
        )
    return Verdict.WAIT, (
        f"{ERR_REASON_LESS_THAN_MIN_AVAILABLE} ({gang.group}: {gang.exist} of {gang.minimum} exist)"
    )


def short_of(minimum: Mapping[str, int], free: Mapping[str, int]) -> list[str]:
    """The resources of a PodGroup's ``minResources`` (in the state's units) that the
    free room of the whole cluster cannot cover."""
    return sorted(name for name, amount in minimum.items() if free.get(name, 0) < amount)


# A gang short of its minimum may complete when members arrive or when room appears for
# the members that did not fit.
EVENTS = (
    ClusterEvent(
        EventResource.POD, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_POD_LABEL
    ),
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
)
SPEC = PluginSpec(
    NAME,
    frozenset({PRE_FILTER, PERMIT}),
    args=CoschedulingArgs,
    reasons={
        ERR_REASON_GANG_MIN_AVAILABLE: Code.UNSCHEDULABLE,
        ERR_REASON_LESS_THAN_MIN_AVAILABLE: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ERR_REASON_TIMED_OUT: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ERR_REASON_MIN_RESOURCES: Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    },
    events=EVENTS,
    queueing_hint=lambda: hint.queueing_hint,
)
