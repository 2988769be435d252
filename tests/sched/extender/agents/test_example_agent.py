"""The example agent - and the test to copy for a new agent (README "Writing an agent").

Build a NodeFeed with the agent, feed it nodes and pods as the watch would (``Change``
objects of the informers' typed views), then check ``filter`` and ``score`` row by row,
and finally the agent behind the real HTTP server under its own prefix.
"""

from __future__ import annotations

import msgspec
import pytest

from kubesalvo.sched.extender.agent import PodInfo
from kubesalvo.sched.extender.agents.example import REASON_AVOIDED, Example, ExampleArgs
from kubesalvo.sched.extender.feed import NodeFeed
from kubesalvo.sched.informers import ADDED, Change
from tests.helpers.extender import config, node, pod, post, running_extender, typed

AVOID = "example.kubesalvo.io/avoid"


def feed_with_nodes() -> tuple[Example, NodeFeed]:
    agent = Example(ExampleArgs())
    feed = NodeFeed([agent])
    feed.on_node_change(Change(ADDED, typed(node("free", pods="10"))))
    feed.on_node_change(Change(ADDED, typed(node("busy", pods="10"))))
    feed.on_node_change(Change(ADDED, typed(node("avoided", pods="10", labels={AVOID: "true"}))))
    for i in range(5):
        feed.state.add_pod(pod(f"p{i}", node_name="busy"))
    return agent, feed


def test_the_filter_fails_avoided_nodes_only_and_preemption_cannot_help():
    agent, feed = feed_with_nodes()
    verdict = agent.filter(feed.state, PodInfo(typed(pod())))
    row = feed.state.row_of
    assert verdict.codes[row["free"]] == 0 and verdict.codes[row["busy"]] == 0
    code = int(verdict.codes[row["avoided"]])
    assert verdict.reason(code) == REASON_AVOIDED and code in verdict.unresolvable


def test_the_score_is_the_share_of_free_pod_slots():
    agent, feed = feed_with_nodes()
    scores = agent.score(feed.state, PodInfo(typed(pod())))
    row = feed.state.row_of
    assert scores[row["free"]] == pytest.approx(1.0)
    assert scores[row["busy"]] == pytest.approx(0.5)


def test_bad_args_are_refused():
    with pytest.raises(msgspec.ValidationError, match="avoidLabel"):
        msgspec.convert({"avoidLabel": ""}, ExampleArgs)


async def test_the_agent_answers_under_its_own_prefix():
    nodes = [node("free"), node("avoided", labels={AVOID: "true"})]
    async with running_extender(config([{"name": "example"}])) as ext:
        status, body = await post(
            ext.url, "example/filter", {"Pod": pod(), "Nodes": {"items": nodes}}
        )
    assert status == 200
    assert [n["metadata"]["name"] for n in body["Nodes"]["items"]] == ["free"]
    assert body["FailedAndUnresolvableNodes"] == {"avoided": f"example: {REASON_AVOIDED}"}
