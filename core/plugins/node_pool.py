"""NodePool (kubesalvo): nodes labelled with a pool take only that pool's pods.

The example of "Writing a plugin" (docs/plugins.md). A node labelled ``kubesalvo.io/pool:
<name>`` (the label key is the ``label`` arg) takes only pods carrying the same label and
value, and a pod carrying the label goes only to nodes of its pool; nodes and pods
without the label ignore each other's pools. It gives dedicated node pools without a
taint on every node and a toleration on every pod.

It is a *static* filter: its answer depends only on the node's labels and the pod's
signature, so the encoder calls :func:`passing_rows` once per class of pods and burst,
over every node at once, and the kernel reads the mask with the other static filters.
Enable it at the filter extension point (it is not in kube-scheduler's defaults)::

    profiles:
    - plugins:
        filter:
          enabled: [{name: NodePool}]
      pluginConfig:
      - {name: NodePool, args: {label: example.com/pool}}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesalvo.core.label_names import qualified_name_problems
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    FILTER,
    ActionType,
    ClusterEvent,
    Code,
    ErrorKind,
    EventResource,
    FieldError,
    NodeTable,
    PluginSpec,
    PodClass,
    check,
)

__all__ = ["ERR_REASON_NODE_POOL", "NAME", "NodePoolArgs", "passing_rows"]

NAME = names.NODE_POOL
ERR_REASON_NODE_POOL = "node(s) didn't match the pod's node pool"


@dataclass(frozen=True)
class NodePoolArgs:
    """NodePoolArgs: the label key that names a node's (and a pod's) pool."""

    label: str = "kubesalvo.io/pool"

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        if not self.label:
            return [FieldError("label", ErrorKind.REQUIRED, detail="a label key is needed")]
        return [
            FieldError("label", ErrorKind.INVALID, self.label, problem)
            for problem in qualified_name_problems(self.label)
        ]


def passing_rows(args: NodePoolArgs, nodes: NodeTable, pod: PodClass) -> npt.NDArray[np.bool_]:
    """The rows whose pool is the pod's: the same label value, or neither has the label."""
    pool = pod.label_map.get(args.label)
    if pool is None:
        return ~nodes.has_label(args.label)
    return nodes.label_in(args.label, (pool,))


# A node joining a pool (or a new node) may take the pod; a pod moved to another pool may
# find room there.
EVENTS = (
    ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL),
)
SPEC = PluginSpec(
    NAME,
    frozenset({FILTER}),
    args=NodePoolArgs,
    reasons={ERR_REASON_NODE_POOL: Code.UNSCHEDULABLE_AND_UNRESOLVABLE},
    events=EVENTS,
    static_filter=passing_rows,
)
