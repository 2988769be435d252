"""NodePorts: host port conflicts by address and protocol."""

import pytest

from kubesalvo.core.plugins import node_ports
from kubesalvo.core.reference import ReferenceScheduler

from .builders import node, pod


def with_port(name, port, protocol="TCP", host_ip="", node_name=None):
    p = pod(name, node_name=node_name)
    entry = {"containerPort": 80, "hostPort": port, "protocol": protocol}
    if host_ip:
        entry["hostIP"] = host_ip
    p["spec"]["containers"][0]["ports"] = [entry]
    return p


@pytest.mark.parametrize(
    ("existing", "wanted", "conflict"),
    [
        (("", "TCP", 80), ("", "TCP", 80), True),
        (("", "TCP", 80), ("", "UDP", 80), False),
        (("", "TCP", 80), ("", "TCP", 81), False),
        (("10.0.0.1", "TCP", 80), ("", "TCP", 80), True),  # 0.0.0.0 wants every address
        (("", "TCP", 80), ("10.0.0.2", "TCP", 80), True),  # taken on every address
        (("10.0.0.1", "TCP", 80), ("10.0.0.2", "TCP", 80), False),
        (("10.0.0.1", "TCP", 80), ("10.0.0.1", "TCP", 80), True),
    ],
)
def test_host_port_conflicts(existing, wanted, conflict):
    ip, protocol, port = existing
    placed = with_port("old", port, protocol, ip, node_name="n")
    ref = ReferenceScheduler([node("n")], [placed])
    ip, protocol, port = wanted
    reasons = ref.filter(with_port("new", port, protocol, ip))["n"]
    assert reasons == ([node_ports.ERR_REASON_NODE_PORTS] if conflict else [])


def test_assumed_pods_take_their_ports():
    ref = ReferenceScheduler([node("a"), node("b")])
    placed = ref.place_burst([with_port("p1", 8080), with_port("p2", 8080), with_port("p3", 8080)])
    assert sorted(r.node or "-" for r in placed) == ["-", "a", "b"]
    assert placed[2].reason_counts == {node_ports.ERR_REASON_NODE_PORTS: 2}
