"""NodeLabelPreference (kubesalvo): prefer nodes that carry (or lack) given label keys.

The example score of "Writing a plugin", and what kube-scheduler's NodeLabel plugin scored
before it was removed: each key of ``present`` that a node carries, and each key of
``absent`` that it lacks, counts once; a node's score is ``100 x counted / keys``, so a node
meeting every preference scores 100. Without args it prefers the nodes that lack
:data:`AVOID` (``kubesalvo.io/avoid``): label a node so to keep new pods off it while others
have room, e.g. before draining it. Nothing else decides it, which makes it a *static*
score: the encoder calls :func:`scores` once per class of pods and burst over every node,
and the kernel adds it, weighted, to the class's fixed scores. Enable it at the score
extension point with a weight::

    profiles:
    - plugins:
        score:
          enabled: [{name: NodeLabelPreference, weight: 2}]
      pluginConfig:
      - {name: NodeLabelPreference, args: {present: [example.com/ssd], absent: [spot]}}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesalvo.core.label_names import qualified_name_problems
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    MAX_NODE_SCORE,
    SCORE,
    ErrorKind,
    FieldError,
    NodeTable,
    PluginSpec,
    PodClass,
    check,
)

__all__ = ["AVOID", "NAME", "NodeLabelPreferenceArgs", "scores"]

NAME = names.NODE_LABEL_PREFERENCE
AVOID = "kubesalvo.io/avoid"


@dataclass(frozen=True)
class NodeLabelPreferenceArgs:
    """NodeLabelPreferenceArgs: label keys a node should carry, and keys it should lack."""

    present: tuple[str, ...] = ()
    absent: tuple[str, ...] = (AVOID,)

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        if not self.present and not self.absent:
            return [FieldError("present", ErrorKind.REQUIRED, detail="name at least one label key")]
        found: list[FieldError] = []
        for field, keys in (("present", self.present), ("absent", self.absent)):
            for i, key in enumerate(keys):
                path = f"{field}[{i}]"
                found.extend(
                    FieldError(path, ErrorKind.INVALID, key, problem)
                    for problem in qualified_name_problems(key)
                )
                if keys.index(key) != i:
                    found.append(FieldError(path, ErrorKind.DUPLICATE, key))
        for i, key in enumerate(self.absent):
            if key in self.present:
                found.append(
                    FieldError(f"absent[{i}]", ErrorKind.INVALID, key, "also listed under present")
                )
        return found


def scores(args: NodeLabelPreferenceArgs, nodes: NodeTable, pod: PodClass) -> npt.NDArray[np.int64]:
    """Each row's score: the share of preferences it meets, scaled to 0..100."""
    met: npt.NDArray[np.int64] | None = None
    for key in args.present:
        carried = nodes.has_label(key).astype(np.int64)
        met = carried if met is None else met + carried
    for key in args.absent:
        lacking = (~nodes.has_label(key)).astype(np.int64)
        met = lacking if met is None else met + lacking
    assert met is not None  # the args name at least one key
    return MAX_NODE_SCORE * met // (len(args.present) + len(args.absent))


SPEC = PluginSpec(
    NAME,
    frozenset({SCORE}),
    args=NodeLabelPreferenceArgs,
    static_score=scores,
)
