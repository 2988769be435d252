"""The policy agent: rules pin pods to pools, cap a team per node, pack or spread it."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from kubesalvo.sched.extender.agent import ArgsError, PodInfo
from kubesalvo.sched.extender.agents.node_labels import selector_rows
from kubesalvo.sched.extender.agents.policy import Policy, PolicyArgs
from kubesalvo.sched.extender.agents.policy_rules import load_rules
from kubesalvo.sched.extender.feed import NodeFeed
from kubesalvo.sched.informers import ADDED, Change
from tests.helpers.extender import node, pod, typed

RULES = [
    {
        "name": "team-a-pool",
        "podSelector": {"matchLabels": {"team": "a"}},
        "requiredNodeSelector": {"matchLabels": {"pool": "a"}},
        "maxPodsPerNode": 2,
        "placement": "spread",
    },
    {
        "name": "batch-packs",
        "podSelector": {
            "matchExpressions": [{"key": "kind", "operator": "In", "values": ["batch"]}]
        },
        "namespaces": ["jobs"],
        "preferredNodeSelector": {"matchLabels": {"disk": "ssd"}},
        "placement": "pack",
    },
]


def setup(rules=RULES):
    agent = Policy(PolicyArgs(rules=rules))
    feed = NodeFeed([agent])
    for name, labels in {
        "a1": {"pool": "a"},
        "a2": {"pool": "a", "disk": "ssd"},
        "b1": {"pool": "b", "disk": "ssd"},
    }.items():
        feed.on_node_change(Change(ADDED, typed(node(name, labels=labels))))
    return agent, feed


def codes(agent, feed, p):
    verdict = agent.filter(feed.state, PodInfo(typed(p)))
    return {name: int(verdict.codes[row]) for name, row in feed.state.row_of.items()}, verdict


def test_a_team_is_pinned_to_its_pool_as_an_unresolvable_failure():
    agent, feed = setup()
    by_node, verdict = codes(agent, feed, pod(labels={"team": "a"}))
    assert by_node["a1"] == 0 and by_node["a2"] == 0
    assert by_node["b1"] > 0 and by_node["b1"] in verdict.unresolvable
    assert "team-a-pool" in verdict.reason(by_node["b1"])
    # Other pods are not touched by the rule.
    assert set(codes(agent, feed, pod(labels={"team": "b"}))[0].values()) == {0}


def test_max_pods_per_node_counts_the_team_on_each_node():
    agent, feed = setup()
    for i in range(2):
        feed.state.add_pod(pod(f"t{i}", labels={"team": "a"}, node_name="a1"))
    feed.state.add_pod(pod("other", labels={"team": "z"}, node_name="a2"))
    by_node, verdict = codes(agent, feed, pod(labels={"team": "a"}))
    assert by_node["a2"] == 0
    assert by_node["a1"] > 0 and by_node["a1"] not in verdict.unresolvable
    assert "2 or more pods of team 'a'" in verdict.reason(by_node["a1"])


def test_spread_prefers_nodes_with_fewer_of_the_team_and_pack_the_opposite():
    agent, feed = setup()
    feed.state.add_pod(pod("t0", labels={"team": "a"}, node_name="a1"))
    row = feed.state.row_of
    spread = agent.score(feed.state, PodInfo(typed(pod(labels={"team": "a"}))))
    assert spread[row["a2"]] > spread[row["a1"]]
    batch_labels = {"kind": "batch", "team": "j"}
    feed.state.add_pod(pod("j0", namespace="jobs", labels=batch_labels, node_name="a1"))
    batch = PodInfo(typed(pod(namespace="jobs", labels=batch_labels)))
    packed = agent.score(feed.state, batch)
    # a1 holds the team's pod (pack) but is not ssd; a2 and b1 are ssd (preferred).
    assert packed[row["a1"]] == pytest.approx(0.5)
    assert packed[row["b1"]] == pytest.approx(0.5)
    # The rule is limited to namespace jobs.
    assert agent.score(feed.state, PodInfo(typed(pod(labels={"kind": "batch"})))) is None


def test_selectors_run_over_label_columns_for_every_operator():
    _, feed = setup()
    row = feed.state.row_of
    cases = {
        (("pool", "In", ("a",)),): {"a1", "a2"},
        (("pool", "NotIn", ("a",)),): {"b1"},
        (("disk", "Exists", ()),): {"a2", "b1"},
        (("disk", "DoesNotExist", ()),): {"a1"},
        (("nope", "NotIn", ("x",)),): {"a1", "a2", "b1"},
        (("nope", "In", ("x",)),): set(),
    }
    for selector, expected in cases.items():
        mask = selector_rows(feed.state, selector)
        assert {name for name, r in row.items() if mask[r]} == expected, selector
    assert not selector_rows(feed.state, None).any()
    assert np.all(selector_rows(feed.state, ()))


@pytest.mark.parametrize(
    ("rules", "where", "why"),
    [
        ([{"name": "x", "podSelector": {}, "placement": "up"}], "rules[0].placement", "'up'"),
        ([{"name": "x"}], "rules[0]", "podSelector"),
        (
            [{"name": "x", "podSelector": {}}, {"name": "x", "podSelector": {}}],
            "rules[1].name",
            "duplicate",
        ),
        (
            [{"name": "x", "podSelector": {"matchExpressions": [{"key": "k", "operator": "X"}]}}],
            "rules[0].podSelector",
            '"X"',
        ),
        ([{"name": "x", "podSelector": {}, "maxPodsPerNode": -1}], "rules[0]", "maxPodsPerNode"),
        ([{"name": "x", "podSelector": {}, "colour": "red"}], "rules[0]", "colour"),
    ],
)
def test_a_bad_rule_file_is_refused_with_the_rules_path_and_why(tmp_path, rules, where, why):
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"rules": rules}))
    with pytest.raises(ArgsError) as caught:
        load_rules(str(path))
    assert caught.value.path.startswith(f"{path}: {where}")
    assert why in str(caught.value)


def test_a_missing_rule_file_is_refused(tmp_path):
    with pytest.raises(ArgsError, match=r"args\.rulesFile"):
        Policy(PolicyArgs(rules_file=str(tmp_path / "none.yaml")))
