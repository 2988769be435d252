"""What every per-node plugin shares: statuses, the plugin shapes, score helpers.

A filter plugin is a class built once per scheduling cycle (its constructor is the
PreFilter step: it reads the pod and the whole snapshot) whose ``filter(node)``
returns None when the node passes, or a Status with kube-scheduler's reasons.
A score plugin is a function of the pod, the snapshot and the feasible nodes that
returns each feasible node's normalised score (0..100), or None when kube-scheduler
would skip the plugin for this pod (PreScore returned Skip: it adds nothing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.plugins.framework import MAX_NODE_SCORE, Code

__all__ = [
    "FilterPlugin",
    "PodInvalid",
    "PreFilterRejection",
    "SchedulingError",
    "Status",
    "default_normalize",
    "go_div",
    "go_round",
    "tolerated",
    "tolerates",
    "untolerated_taint",
]

Pod = Mapping[str, Any]


class PodInvalid(ValueError):
    """The pod cannot be evaluated: kube-scheduler fails the attempt with an error.

    This happens for selectors apimachinery refuses to build (say an ``In`` without
    values) that the API server let through, and for pods outside the reference's
    scope (volumes, resource claims).
    """


@dataclass(frozen=True)
class Status:
    """A filter's verdict on one node: a code and the reasons shown to users."""

    code: Code
    reasons: tuple[str, ...]

    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE, reasons)

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)


class SchedulingError(Exception):
    """A plugin failed the attempt with an error (not a fit failure).

    kube-scheduler records it as a FailedScheduling event whose message is the error's
    text (``message``) with the condition reason SchedulerError, and retries the pod
    after a backoff; nothing is counted per node, and no preemption is tried.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PreFilterRejection(Exception):
    """A PreFilter rejected the pod outright; ``message`` replaces the per-node counts."""

    def __init__(self, plugin: str, message: str) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.message = message


class FilterPlugin(Protocol):
    """A filter for one pod's cycle (the constructor does the PreFilter work)."""

    #: Nodes a PreFilter narrowed the search to (None: all nodes).
    node_names: frozenset[str] | None

    def filter(self, node: NodeInfo) -> Status | None: ...


def default_normalize(scores: dict[str, int], reverse: bool = False) -> dict[str, int]:
    """helper.DefaultNormalizeScore: scale [0, max] to [0, 100], optionally reversed."""
    highest = max(scores.values(), default=0)
    if highest == 0:
        return {name: MAX_NODE_SCORE if reverse else 0 for name in scores}
    out = {}
    for name, score in scores.items():
        scaled = MAX_NODE_SCORE * score // highest
        out[name] = MAX_NODE_SCORE - scaled if reverse else scaled
    return out


def go_round(value: float) -> int:
    """Go's math.Round: to the nearest integer, halves away from zero."""
    whole = math.trunc(value)
    if abs(value - whole) >= 0.5:
        whole += 1 if value > 0 else -1
    return int(whole)


def go_div(a: int, b: int) -> int:
    """Go's integer division, which truncates toward zero (Python's // floors)."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Toleration.ToleratesTaint: effect, key and value rules of v1.34.

    An empty effect tolerates every effect; an empty key (only valid with Exists)
    every key. Equal (or no operator) compares values; Exists ignores them.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect", ""):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key", ""):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def tolerated(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def untolerated_taint(
    pod: Pod, node: NodeInfo, effects: frozenset[str] = frozenset({"NoSchedule", "NoExecute"})
) -> Mapping[str, Any] | None:
    """The first taint of the given effects the pod does not tolerate, if any."""
    tolerations = list((pod.get("spec") or {}).get("tolerations") or ())
    for taint in node.taints:
        if taint.get("effect") in effects and not tolerated(tolerations, taint):
            return taint
    return None
