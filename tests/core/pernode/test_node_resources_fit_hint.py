"""NodeResourcesFit's queueing hint: which cluster events can help a pod it rejected."""

from __future__ import annotations

from kubesalvo.core.pernode.node_resources_fit_hint import queueing_hint as fit_hint
from kubesalvo.core.plugins.framework import ASSIGNED_POD_DELETE, NODE_ADD
from tests.core.pernode.hint_fixtures import NODE_UPDATE, node, pod


def test_fit_queues_for_an_added_node_that_could_hold_the_pod() -> None:
    assert fit_hint(pod("2"), NODE_ADD, None, node("4"))
    assert fit_hint(pod("4"), NODE_ADD, None, node("4"))


def test_fit_skips_an_added_node_too_small_or_full() -> None:
    assert not fit_hint(pod("8"), NODE_ADD, None, node("4"))
    assert not fit_hint(pod("1"), NODE_ADD, None, node("4", pods="0"))


def test_fit_queues_when_allocatable_grows_in_what_the_pod_asks_for() -> None:
    assert fit_hint(pod("3"), NODE_UPDATE, node("2"), node("4"))
    assert fit_hint(pod("1"), NODE_UPDATE, node("4", pods="10"), node("4", pods="20"))


def test_fit_skips_an_update_that_changed_nothing_the_pod_needs() -> None:
    assert not fit_hint(pod("1"), NODE_UPDATE, node("4"), node("4", labels={"a": "b"}))


def test_fit_queues_only_when_a_placed_pod_goes_away() -> None:
    assert fit_hint(pod(), ASSIGNED_POD_DELETE, pod(node_name="n"), None)
    assert not fit_hint(pod(), ASSIGNED_POD_DELETE, pod(), None)
