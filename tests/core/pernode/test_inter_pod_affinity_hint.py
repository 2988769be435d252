"""InterPodAffinity's queueing hint: which cluster events can help a pod it rejected."""

from __future__ import annotations

from kubesalvo.core.pernode.inter_pod_affinity_hint import queueing_hint as inter_pod_affinity_hint
from kubesalvo.core.plugins.framework import ASSIGNED_POD_DELETE
from tests.core.pernode.hint_fixtures import POD_ADD, POD_LABEL, models, other, pod, with_affinity


def test_inter_pod_affinity_queues_when_a_wanted_pod_is_placed() -> None:
    wants_db = with_affinity("pod_affinity", {"app": "db"})
    assert inter_pod_affinity_hint(wants_db, POD_ADD, None, other("db", {"app": "db"}))
    assert not inter_pod_affinity_hint(wants_db, POD_ADD, None, other("web", {"app": "web"}))
    # An unplaced pod changes nothing for affinity.
    assert not inter_pod_affinity_hint(
        wants_db, POD_ADD, None, other("db", {"app": "db"}, node_name="")
    )
    # Another namespace is outside the term's (default: own) namespace.
    assert not inter_pod_affinity_hint(
        wants_db, POD_ADD, None, other("db", {"app": "db"}, namespace="prod")
    )
    relabel_old, relabel_new = other("x", {"app": "web"}), other("x", {"app": "db"})
    assert inter_pod_affinity_hint(wants_db, POD_LABEL, relabel_old, relabel_new)


def test_inter_pod_affinity_queues_when_an_avoided_pod_goes() -> None:
    avoids_db = with_affinity("pod_anti_affinity", {"app": "db"})
    assert inter_pod_affinity_hint(avoids_db, ASSIGNED_POD_DELETE, other("db", {"app": "db"}), None)
    assert not inter_pod_affinity_hint(
        avoids_db, ASSIGNED_POD_DELETE, other("web", {"app": "web"}), None
    )


def test_inter_pod_affinity_queues_when_a_pod_whose_anti_affinity_hit_us_goes() -> None:
    placed = with_affinity("pod_anti_affinity", {})
    placed.metadata.name, placed.metadata.uid, placed.spec.node_name = "guard", "uid-guard", "n1"
    assert inter_pod_affinity_hint(pod(), ASSIGNED_POD_DELETE, placed, None)
    assert not inter_pod_affinity_hint(pod(), ASSIGNED_POD_DELETE, other("x", {}), None)


def test_inter_pod_affinity_with_a_namespace_selector_always_queues() -> None:
    p = with_affinity(
        "pod_affinity",
        {"app": "db"},
        namespace_selector=models.LabelSelector(match_labels={"a": "b"}),
    )
    assert inter_pod_affinity_hint(p, POD_ADD, None, other("web", {"app": "web"}))
