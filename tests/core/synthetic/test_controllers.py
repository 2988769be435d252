"""ReplicaSets and Jobs for a burst: the same pods, owned the way users create them."""

from __future__ import annotations

from collections import Counter

from kubesalvo.core.synthetic import make_batch
from kubesalvo.core.synthetic.controllers import as_controllers


def replicas_of(obj: dict) -> int:
    spec = obj["spec"]
    return spec["replicas"] if obj["kind"] == "ReplicaSet" else spec["completions"]


def test_the_controllers_and_bare_pods_add_up_to_the_burst():
    batch = make_batch(3000, seed=1, shape="mixed")
    controllers, bare = as_controllers(batch)
    assert sum(replicas_of(c) for c in controllers) + len(bare) == 3000
    kinds = Counter(c["kind"] for c in controllers)
    assert kinds["ReplicaSet"] > 10 and kinds["Job"] > 10
    assert {p["metadata"]["labels"]["kubesalvo.io/workload"] for p in bare} == {
        "constrained",
        "inference",
        "unschedulable",
    }


def test_a_replica_set_selects_its_own_template():
    controllers, _ = as_controllers(make_batch(100, seed=2, shape="replicasets", classes=4))
    assert [c["kind"] for c in controllers] == ["ReplicaSet"] * 4
    for rs in controllers:
        template_labels = rs["spec"]["template"]["metadata"]["labels"]
        selector = rs["spec"]["selector"]["matchLabels"]
        assert selector.items() <= template_labels.items()
        assert set(selector) == {"app", "pod-template-hash"}
        assert rs["spec"]["template"]["spec"]["schedulerName"] == "kubesalvo"
    selectors = [tuple(sorted(c["spec"]["selector"]["matchLabels"].items())) for c in controllers]
    assert len(set(selectors)) == 4


def test_jobs_run_all_their_pods_at_once_and_leave_their_own_labels_to_the_controller():
    controllers, _ = as_controllers(make_batch(600, seed=3, shape="gangs"))
    for job in (c for c in controllers if c["kind"] == "Job"):
        spec = job["spec"]
        assert spec["parallelism"] == spec["completions"] >= 1
        labels = spec["template"]["metadata"]["labels"]
        assert "minAvailable" in labels
        assert not {"job-name", "batch.kubernetes.io/controller-uid"} & set(labels)
        assert spec["template"]["spec"]["restartPolicy"] == "Never"
