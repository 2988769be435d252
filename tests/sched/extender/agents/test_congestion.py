"""The congestion agent: recent bindings and pods not Running yet, fading with a half-life."""

from __future__ import annotations

import numpy as np
import pytest

from kubesalvo.sched.extender.agent import PodInfo
from kubesalvo.sched.extender.agents.congestion import Congestion, CongestionArgs
from kubesalvo.sched.extender.agents.decay import DecayingSums
from kubesalvo.sched.extender.feed import NodeFeed
from kubesalvo.sched.informers import ADDED, DELETED, MODIFIED, SYNCED, Change
from tests.helpers.extender import FakeClock, node, pod, typed


def setup(**args):
    clock = FakeClock()
    agent = Congestion(CongestionArgs(**args), clock=clock)
    feed = NodeFeed([agent], clock=clock)
    for name in ("a", "b", "c"):
        feed.on_node_change(Change(ADDED, typed(node(name))))
    feed.on_pod_change(Change(SYNCED))
    return clock, agent, feed


def incoming():
    return PodInfo(typed(pod("new")))


def rows(feed, *names):
    return [feed.state.row_of[name] for name in names]


def test_a_burst_bound_to_one_node_filters_it_and_scores_it_lowest():
    _, agent, feed = setup(threshold=2.5, starting_weight=1.0, churn_weight=0.5)
    a, b, c = rows(feed, "a", "b", "c")
    for i in range(2):  # each bind: 1 starting + 0.5 churn
        feed.bound(typed(pod(f"p{i}")), f"u{i}", "a")
    feed.bound(typed(pod("q")), "uq", "b")
    verdict = agent.filter(feed.state, incoming())
    assert verdict.codes[a] == 1 and verdict.codes[b] == 0 and verdict.codes[c] == 0
    assert verdict.reason(1).startswith("node is congested")
    scores = agent.score(feed.state, incoming())
    assert scores[c] > scores[b] > scores[a]
    assert scores[a] == pytest.approx(1 / (1 + 3.0))


def test_congestion_halves_every_half_life_and_fades_away():
    clock, agent, feed = setup(half_life_seconds=10, threshold=2.5)
    (a,) = rows(feed, "a")
    for i in range(2):
        feed.bound(typed(pod(f"p{i}")), f"u{i}", "a")
    assert agent.congestion(feed.state, clock.now)[a] == pytest.approx(3.0)
    clock.now += 10
    assert agent.congestion(feed.state, clock.now)[a] == pytest.approx(1.5)
    assert agent.filter(feed.state, PodInfo(typed(pod()))).codes[a] == 0
    clock.now += 1000
    assert agent.congestion(feed.state, clock.now)[a] == pytest.approx(0.0, abs=1e-12)


def test_the_watch_counts_pods_starting_until_they_run_and_deletions_as_churn():
    clock, agent, feed = setup(starting_weight=1.0, churn_weight=1.0)
    (b,) = rows(feed, "b")
    bound = typed(pod("w", node_name="b"))
    feed.on_pod_change(Change(ADDED, bound))  # seen bound by anyone: churn + starting
    assert agent.congestion(feed.state, clock.now)[b] == pytest.approx(2.0)
    running = typed(pod("w", node_name="b", phase="Running"))
    feed.on_pod_change(Change(MODIFIED, running, bound))
    assert agent.congestion(feed.state, clock.now)[b] == pytest.approx(1.0)
    feed.on_pod_change(Change(DELETED, running))
    assert agent.congestion(feed.state, clock.now)[b] == pytest.approx(2.0)


def test_a_bind_seen_first_by_the_bind_verb_is_not_counted_again_by_the_watch():
    clock, agent, feed = setup(starting_weight=1.0, churn_weight=1.0)
    (a,) = rows(feed, "a")
    pending = typed(pod("x", uid="ux"))
    feed.bound(pending, "ux", "a")
    feed.on_pod_change(Change(MODIFIED, typed(pod("x", uid="ux", node_name="a")), pending))
    assert agent.congestion(feed.state, clock.now)[a] == pytest.approx(2.0)


def test_pods_already_bound_when_the_watch_starts_are_not_churn():
    clock = FakeClock()
    agent = Congestion(CongestionArgs(starting_weight=0.0, churn_weight=1.0), clock=clock)
    feed = NodeFeed([agent], clock=clock)
    feed.on_node_change(Change(ADDED, typed(node("a"))))
    feed.on_pod_change(Change(ADDED, typed(pod("old", node_name="a", phase="Running"))))
    feed.on_pod_change(Change(SYNCED))
    assert agent.congestion(feed.state, clock.now).sum() == 0


def test_a_removed_nodes_row_starts_clean_for_the_next_node():
    _, agent, feed = setup(threshold=0.5)
    (a,) = rows(feed, "a")
    feed.bound(typed(pod("p")), "u", "a")
    feed.on_node_change(Change(DELETED, typed(node("a"))))
    feed.on_node_change(Change(ADDED, typed(node("d"))))
    assert feed.state.row_of["d"] == a
    assert agent.filter(feed.state, incoming()).codes[a] == 0


def test_decaying_sums_survive_rebasing_far_into_the_future():
    sums = DecayingSums(1.0, origin=0.0)
    sums.add(0, 0.0)
    sums.add(0, 100.0)  # 2**100 would lose the first event: the origin moves
    sums.add(0, 100.0, sign=-1)
    assert sums.values(1, 100.0)[0] == pytest.approx(2.0**-100, rel=1e-6, abs=1e-30)
    assert np.all(sums.values(1, 200.0) >= 0)


@pytest.mark.parametrize("field", ["half_life_seconds", "threshold"])
def test_negative_settings_are_refused(field):
    with pytest.raises(ValueError):
        CongestionArgs(**{field: -1.0})
