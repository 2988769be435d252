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
from typing import Any

import numpy as np

from kubesalvo.core.pernode.framework import Pod, PreFilterRejection, Status
from kubesalvo.core.pernode.snapshot import NodeInfo, Snapshot
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import PerNode

__all__ = ["PER_NODE", "DeviceVerdicts"]


class DeviceVerdicts:
    """The Filter's failure text by node name (nodes absent from it pass)."""

    node_names: frozenset[str] | None = None

    def __init__(self, failures: Mapping[str, str]) -> None:
        self.failures = failures

    def filter(self, node: NodeInfo) -> Status | None:
        text = self.failures.get(node.name)
        return None if text is None else Status.unresolvable(text)


def _failures(devices: Any, snapshot: Snapshot) -> Mapping[str, str]:
    """The Filter of a pod's cycle state (``core/dra/pod.PodDevices``) on every node (it
    keeps the allocation it finds on each node that passes: what the v1.37 Score reads).
    A rejection or error of its PreFilter rejects the pod on every node, as in the burst."""
    problem = devices.rejection or devices.error
    if problem:
        raise PreFilterRejection(names.DYNAMIC_RESOURCES, problem)
    nodes = snapshot.nodes
    failures: Mapping[str, str] = devices.node_failures(
        [n.name for n in nodes], np.ones(len(nodes), dtype=bool), lambda row: nodes[row].labels
    )
    return failures


def _filter(evaluator: Any, pod: Pod) -> DeviceVerdicts | None:
    """The verdicts the caller kept from the pod's cycle (``device_failures``: preemption's
    dry run), else those of its cycle state (``devices``: explain); without either (a pod
    without claims) it admits every node."""
    uid = (pod.get("metadata") or {}).get("uid", "")
    failures = evaluator.device_failures.get(uid)
    if failures is None and uid in evaluator.devices:
        failures = _failures(evaluator.devices[uid], evaluator.snapshot)
    return None if failures is None else DeviceVerdicts(failures)


# Its Filter for the per-node evaluator (its v1.37 Score is its spec's score channel, which
# the evaluator runs with the pod's cycle state).
PER_NODE = PerNode(filter=_filter)
