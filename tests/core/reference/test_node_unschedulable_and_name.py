"""NodeUnschedulable and NodeName."""

from kubesalvo.core.plugins import node_name, node_unschedulable, taint_toleration
from kubesalvo.core.reference import ReferenceScheduler

from .builders import node, pod


def test_cordoned_nodes_refuse_pods_unless_they_tolerate_the_unschedulable_taint():
    ref = ReferenceScheduler([node("open"), node("cordoned", unschedulable=True)])
    assert ref.filter(pod())["cordoned"] == [node_unschedulable.ERR_REASON_UNSCHEDULABLE]
    tolerant = pod(
        tolerations=[
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ]
    )
    assert ref.filter(tolerant)["cordoned"] == []
    assert ref.filter(pod(tolerations=[{"operator": "Exists"}]))["cordoned"] == []


def test_node_name_fits_only_the_named_node():
    ref = ReferenceScheduler([node("a"), node("b")])
    assert ref.filter(pod(node_name="b")) == {"a": [node_name.ERR_REASON_NODE_NAME], "b": []}


def test_filters_report_only_the_first_failing_plugin_in_profile_order():
    # Cordoned (NodeUnschedulable runs first) and tainted and too small.
    bad = node("bad", unschedulable=True, taints=[{"key": "k", "effect": "NoSchedule"}], cpu="1")
    tainted_small = node("tainted", taints=[{"key": "k", "effect": "NoSchedule"}], cpu="1")
    ref = ReferenceScheduler([bad, tainted_small, node("small", cpu="1")])
    result = ref.schedule(pod(requests={"cpu": "2"}))
    assert result.reason_counts == {
        node_unschedulable.ERR_REASON_UNSCHEDULABLE: 1,
        taint_toleration.ERR_REASON_UNTOLERATED_TAINT: 1,
        "Insufficient cpu": 1,
    }
    assert result.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), "
        "1 node(s) were unschedulable."
    )
