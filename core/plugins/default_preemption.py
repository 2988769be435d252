"""DefaultPreemption: a pod that fits nowhere may evict lower-priority pods.

Deciding is pure (``core/preemption.py``); writing (nominating, deleting victims) is the
runtime's (``sched/preemption.py``). Here: its args, its texts, its events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesalvo.core.args_reading import ArgsDecoder, build, open_args
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    POST_FILTER,
    PRE_ENQUEUE,
    ActionType,
    ClusterEvent,
    ErrorKind,
    EventResource,
    FieldError,
    PluginSpec,
    check,
    fit_error_message,
)

__all__ = [
    "NAME",
    "NO_PREEMPTION_VICTIMS",
    "PREEMPTION_NOT_HELPFUL",
    "DefaultPreemptionArgs",
    "preemption_message",
]

NAME = names.DEFAULT_PREEMPTION
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_PREEMPTION_VICTIMS = "No preemption victims found for incoming pod"


def preemption_message(num_nodes: int, reason_counts: Mapping[str, int]) -> str:
    """The post-filter text when no candidate is found.

    ``reason_counts`` are the reasons of its dry run; nodes it did not try (their
    failure was unresolvable) count under PREEMPTION_NOT_HELPFUL.
    """
    return "preemption: " + fit_error_message(num_nodes, reason_counts)


@dataclass(frozen=True)
class DefaultPreemptionArgs:
    """DefaultPreemptionArgs: how many candidate nodes the dry run looks for."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        pct, absolute = self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        out: list[FieldError] = []
        if not 0 <= pct <= 100:
            out.append(
                FieldError(
                    "minCandidateNodesPercentage",
                    ErrorKind.INVALID,
                    pct,
                    "not in valid range [0, 100]",
                )
            )
        if absolute < 0:
            out.append(
                FieldError(
                    "minCandidateNodesAbsolute",
                    ErrorKind.INVALID,
                    absolute,
                    "not in valid range [0, inf)",
                )
            )
        if pct == 0 and absolute == 0:
            out.append(
                FieldError(
                    "minCandidateNodesPercentage",
                    ErrorKind.INVALID,
                    pct,
                    "cannot be zero at the same time as minCandidateNodesAbsolute",
                )
            )
            out.append(
                FieldError(
                    "minCandidateNodesAbsolute",
                    ErrorKind.INVALID,
                    absolute,
                    "cannot be zero at the same time as minCandidateNodesPercentage",
                )
            )
        return out


# Asynchronous preemption (beta, on in v1.34): a victim's deletion retries the pod.
EVENTS = (ClusterEvent(EventResource.POD, ActionType.DELETE),)


def read_args(d: ArgsDecoder, raw: Any, path: str) -> DefaultPreemptionArgs:
    """DefaultPreemptionArgs from its pluginConfig document."""
    f = open_args(d, raw, path, NAME, ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"))
    pct = f.integer("minCandidateNodesPercentage", 10)
    absolute = f.integer("minCandidateNodesAbsolute", 100)
    assert pct is not None and absolute is not None
    return build(d, path, lambda: DefaultPreemptionArgs(pct, absolute), DefaultPreemptionArgs())


SPEC = PluginSpec(
    NAME,
    frozenset({PRE_ENQUEUE, POST_FILTER}),
    args=DefaultPreemptionArgs,
    events=EVENTS,
    args_reader=read_args,
)
