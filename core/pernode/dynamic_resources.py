"""DynamicResources for one pod over its nodes, as preemption's dry run runs it.

The allocation itself lives in ``core/dra`` and runs once per pod (its PreFilter and
Filter in the burst). What the per-node evaluator needs of it is that Filter's verdict on
each node, which evicting pods never changes: kube-scheduler's plugin implements no
AddPod or RemovePod, so its dry run sees the same verdict with or without the victims. A
pod's verdicts come from its cycle (``PodDevices.node_failures``); every failure is
UnschedulableAndUnresolvable, as upstream's plugin returns them, so preemption never tries
a node the pod's claims cannot use.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesalvo.core.pernode.framework import Status
from kubesalvo.core.pernode.snapshot import NodeInfo

__all__ = ["DeviceVerdicts"]


class DeviceVerdicts:
    """The Filter's failure text by node name (nodes absent from it pass)."""

    node_names: frozenset[str] | None = None

    def __init__(self, failures: Mapping[str, str]) -> None:
        self.failures = failures

    def filter(self, node: NodeInfo) -> Status | None:
        text = self.failures.get(node.name)
        return None if text is None else Status.unresolvable(text)
