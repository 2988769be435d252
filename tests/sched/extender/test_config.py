"""The extender's configuration: defaults, and refusals with the field path and why."""

from __future__ import annotations

import pytest
import yaml

from kubesalvo.sched.extender.config import ConfigError, build, load_config


def test_without_a_file_the_agents_are_congestion_and_safe():
    config = load_config(None)
    assert [(a.name, a.weight) for a in config.agents] == [("congestion", 1), ("safe", 1)]


def test_agents_get_their_typed_args_weights_and_managed_resources():
    config = build(
        {
            "apiVersion": "kubesalvo.io/v1alpha1",
            "kind": "ExtenderConfiguration",
            "agents": [
                {"name": "congestion", "weight": 3, "args": {"halfLifeSeconds": 5}},
                {"name": "example", "managedResources": ["example.com/gpu"]},
            ],
        }
    )
    congestion, example = config.agents
    assert congestion.weight == 3 and congestion.agent.args.half_life_seconds == 5
    assert example.managed_resources == frozenset({"example.com/gpu"})


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"agents": [{"name": "fast"}]}, "agents[0].name: 'fast'; accepted: congestion, example"),
        ({"agents": [{"name": "safe", "weight": 500}]}, "agents[0].weight: 500; accepted: 0 to"),
        ({"agents": [{"name": "safe", "args": {"treshold": 1}}]}, "agents[0].args: Object"),
        ({"agents": [{"name": "safe", "args": {"threshold": 3}}]}, "threshold must be in (0, 1]"),
        ({"agents": [{"name": "safe", "args": {"window": "ten"}}]}, "agents[0].args.window"),
        ({"agents": [{"name": "safe"}, {"name": "safe"}]}, "agents[1].name: agent 'safe' is"),
        ({"agents": []}, "agents: at least one agent"),
        ({"kind": "KubeSchedulerConfiguration"}, "kind: 'KubeSchedulerConfiguration'"),
        ({"listen": ":80"}, "unknown field `listen`"),
        ({"agents": [{"name": "policy"}]}, "agents[0].args.rulesFile: the policy agent needs"),
    ],
)
def test_a_wrong_configuration_names_the_field(raw, message):
    with pytest.raises(ConfigError) as caught:
        build(raw, "cfg.yaml")
    assert str(caught.value).startswith("cfg.yaml: ")
    assert message in str(caught.value)


def test_a_bad_policy_rule_file_names_the_config_field_the_file_and_the_rule(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"rules": [{"name": "r", "podSelector": [], "x": 1}]}))
    path = tmp_path / "extender.yaml"
    path.write_text(
        yaml.safe_dump({"agents": [{"name": "policy", "args": {"rulesFile": str(rules)}}]})
    )
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    text = str(caught.value)
    assert text.startswith(f"{path}: agents[0].args.rulesFile: {rules}: rules[0]")
