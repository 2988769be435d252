"""NodeLabelRank (kubesalvo): prefer nodes by the rank of one label's value.

The example of a *normalised* score in "Writing a plugin". ``values`` lists a label's
values best first: a node whose label ``key`` holds ``values[i]`` has the raw value
``len(values) - i``, any other node 0. The module only gives those raw values
(:data:`SCORE_CHANNEL`); the kernel normalises them over each pod's feasible nodes by
their largest value (kube-scheduler's DefaultNormalizeScore), so the best-ranked node a
pod can use scores 100 whether or not nodes of a better rank exist but are full. Without
args it ranks ``kubesalvo.io/tier``: ``high`` before ``medium`` before ``low``::

    profiles:
    - plugins:
        score:
          enabled: [{name: NodeLabelRank, weight: 2}]
      pluginConfig:
      - {name: NodeLabelRank, args: {key: example.com/generation, values: ["5", "4"]}}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesalvo.core.label_names import label_value_problems, qualified_name_problems
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    SCORE,
    ErrorKind,
    FieldError,
    NodeTable,
    Normalise,
    PluginSpec,
    PodClass,
    ScoreChannel,
    check,
)

__all__ = ["NAME", "SCORE_CHANNEL", "TIER", "NodeLabelRankArgs", "ranks"]

NAME = names.NODE_LABEL_RANK
TIER = "kubesalvo.io/tier"


@dataclass(frozen=True)
class NodeLabelRankArgs:
    """NodeLabelRankArgs: a label key and its values, best first."""

    key: str = TIER
    values: tuple[str, ...] = ("high", "medium", "low")

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        found = [
            FieldError("key", ErrorKind.INVALID, self.key, problem)
            for problem in qualified_name_problems(self.key)
        ]
        if not self.values:
            found.append(FieldError("values", ErrorKind.REQUIRED, detail="name at least one value"))
        for i, value in enumerate(self.values):
            path = f"values[{i}]"
            found.extend(
                FieldError(path, ErrorKind.INVALID, value, problem)
                for problem in label_value_problems(value)
            )
            if self.values.index(value) != i:
                found.append(FieldError(path, ErrorKind.DUPLICATE, value))
        return found


def ranks(args: NodeLabelRankArgs, nodes: NodeTable, pod: PodClass) -> npt.NDArray[np.int64]:
    """Each row's raw value: ``len(values) - i`` for the i-th value, 0 for other rows."""
    out = np.zeros(len(nodes.node_names()), dtype=np.int64)
    for i, value in enumerate(args.values):
        out[nodes.label_in(args.key, [value])] = len(args.values) - i
    return out


def _same_for_every_pod(args: NodeLabelRankArgs, nodes: NodeTable, pod: PodClass) -> None:
    # The ranks read no part of the pod: every class shares one row of raw values.
    return None


# The higher the rank, the higher the score, scaled by the best rank a pod can use.
SCORE_CHANNEL = ScoreChannel(Normalise.MAX, ranks, _same_for_every_pod)
SPEC = PluginSpec(
    NAME,
    frozenset({SCORE}),
    args=NodeLabelRankArgs,
    score_channel=SCORE_CHANNEL,
)
