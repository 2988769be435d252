"""NodeLabelRank in a KubeSchedulerConfiguration: its args read by the generic reader, with
or without NodeAffinity's score (both MAX-normalised)."""

from __future__ import annotations

import textwrap

import pytest

from kubesalvo.sched.config import ConfigError, parse_config

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def test_its_args_are_read_and_it_scores_without_node_affinitys_score():
    config = parse_config(
        HEADER
        + textwrap.dedent(
            """\
            profiles:
            - plugins:
                score:
                  enabled: [{name: NodeLabelRank, weight: 2}]
                  disabled: [{name: NodeAffinity}]
              pluginConfig:
              - {name: NodeLabelRank, args: {key: example.com/generation, values: ["5", "4"]}}
            """
        )
    )
    core = config.profiles[0].core
    assert dict(core.scores)["NodeLabelRank"] == 2
    assert "NodeAffinity" not in dict(core.scores)
    args = core.args_of("NodeLabelRank")
    assert (args.key, args.values) == ("example.com/generation", ("5", "4"))


def test_beside_the_default_scores_it_scores_with_its_default_args():
    config = parse_config(
        HEADER + "profiles:\n- plugins: {score: {enabled: [{name: NodeLabelRank}]}}\n"
    )
    core = config.profiles[0].core
    assert dict(core.scores)["NodeAffinity"] == 2
    assert dict(core.scores)["NodeLabelRank"] == 1
    assert core.args_of("NodeLabelRank").key == "kubesalvo.io/tier"


def test_bad_values_are_refused_at_their_path():
    with pytest.raises(ConfigError) as info:
        parse_config(
            HEADER
            + "profiles:\n- pluginConfig:\n  - {name: NodeLabelRank, args: {values: [a, a]}}\n"
        )
    assert "profiles[0].pluginConfig[0].args.values[1]" in info.value.paths
