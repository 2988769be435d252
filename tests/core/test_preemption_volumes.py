"""DefaultPreemption's dry run sees the volume filters, as kube-scheduler's does: a pod
whose volume is pinned to one node preempts only there, and a volume reason on a node
(unresolvable) keeps preemption off it."""

from __future__ import annotations

from kubesalvo.core.plugins import default_preemption
from kubesalvo.core.plugins import volume_binding as vb
from kubesalvo.core.preemption import preempt
from kubesalvo.core.volumes import CLAIMS, VOLUMES, StorageObjects
from tests.core.test_preemption import NOW, node, pod, victim_names
from tests.helpers.volumes import claim, claim_volume, local_volume


def storage_pinned_to(host: str) -> StorageObjects:
    storage = StorageObjects()
    storage.put(CLAIMS, claim("data", volume="pv"))
    storage.put(VOLUMES, local_volume("pv", host))
    return storage


def stateful(name: str, priority: int, cpu: str):
    return pod(name, priority, cpu, volumes=[claim_volume("data", "data")])


def test_a_pod_pinned_by_its_volume_preempts_on_that_node_only():
    nodes = [node("n1"), node("n2")]
    # n1 would be the cheaper choice (a lower priority victim); the volume rules it out.
    pods = [pod("cheap", 1, "4", "n1"), pod("dearer", 5, "4", "n2")]
    decision = preempt(
        stateful("db", 10, "2"), nodes, pods, now=NOW, storage=storage_pinned_to("n2")
    )
    assert decision.node == "n2"
    assert victim_names(decision) == ["dearer"]


def test_no_node_holds_the_volume_so_every_dry_run_fails_on_it():
    # Both nodes first fail for cpu (Unschedulable: tried); with the victims gone the
    # volume's node affinity still fails, and that is what the message counts.
    nodes = [node("n1"), node("n2")]
    pods = [pod("a", 1, "4", "n1"), pod("b", 1, "4", "n2")]
    decision = preempt(
        stateful("db", 10, "2"), nodes, pods, now=NOW, storage=storage_pinned_to("n9")
    )
    assert decision.node is None
    assert decision.reason_counts == {vb.ERR_REASON_NODE_CONFLICT: 2}
    assert default_preemption.PREEMPTION_NOT_HELPFUL not in decision.message


def test_a_read_write_once_pod_conflict_is_resolved_by_preempting_the_holder():
    storage = StorageObjects()
    storage.put(CLAIMS, claim("data", volume="pv", modes=("ReadWriteOncePod",)))
    storage.put(VOLUMES, local_volume("pv"))
    nodes = [node("n1"), node("n2")]
    holder = pod("holder", 1, "1", "n1", volumes=[claim_volume("data", "data")])
    pods = [holder, pod("other", 1, "1", "n1"), pod("bystander", 1, "1", "n2")]
    decision = preempt(stateful("db", 10, "1"), nodes, pods, now=NOW, storage=storage)
    assert decision.node == "n1"
    assert victim_names(decision) == ["holder"]  # the other pod of n1 is not in the way


def test_an_in_tree_disk_conflict_is_resolved_by_preempting_the_pod_that_mounts_it():
    # Both nodes have room; on each a lower-priority pod writes the GCE disk the pod
    # wants. n2's mounter is the cheaper victim (priority 1 against 3).
    disk = [{"name": "d", "gcePersistentDisk": {"pdName": "pd-1"}}]
    nodes = [node("n1"), node("n2")]
    pods = [pod("dear", 3, "1", "n1", volumes=disk), pod("cheap", 1, "1", "n2", volumes=disk)]
    pods.append(pod("bystander", 1, "1", "n2"))
    decision = preempt(pod("db", 10, "1", volumes=disk), nodes, pods, now=NOW)
    assert decision.node == "n2"
    assert victim_names(decision) == ["cheap"]  # the bystander is not in the way
