"""NodePorts: the host ports a pod binds must be free on the node.

A wanted port on 0.0.0.0 conflicts with the same protocol and port on any address;
a wanted port on a specific address conflicts with that address or 0.0.0.0. The
pod's own ports are not checked against each other.
"""

from __future__ import annotations

from typing import Any

from kubesalvo.core.pernode.framework import Pod, Status
from kubesalvo.core.pernode.snapshot import NodeInfo
from kubesalvo.core.plugins import node_ports
from kubesalvo.core.plugins.framework import PerNode
from kubesalvo.core.resources import host_ports

_ANY = "0.0.0.0"


class NodePorts:
    node_names: frozenset[str] | None = None

    def __init__(self, pod: Pod) -> None:
        self.wanted = host_ports(pod)

    def filter(self, node: NodeInfo) -> Status | None:
        for port in self.wanted:
            if _conflicts(node.used_ports, port.host_ip or _ANY, port.protocol or "TCP", port.port):
                return Status.unschedulable(node_ports.ERR_REASON_NODE_PORTS)
        return None


def _conflicts(used: set[tuple[str, str, int]], ip: str, protocol: str, port: int) -> bool:
    if ip == _ANY:
        return any(p == protocol and n == port for _, p, n in used)
    return (_ANY, protocol, port) in used or (ip, protocol, port) in used


# Its contribution to the per-node evaluator (``PodEvaluator``), loaded by its spec.
def _filter(evaluator: Any, pod: Pod) -> NodePorts:
    return NodePorts(pod)


PER_NODE = PerNode(filter=_filter)
