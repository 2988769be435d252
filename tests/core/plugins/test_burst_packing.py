"""BurstPacking's args and its place in a profile: read from a KubeSchedulerConfiguration
(field paths on errors), acting only when enabled, kept by ``simulate --strategy``."""

from __future__ import annotations

import argparse
import importlib.util
import textwrap

import pytest

from kubesalvo.core.plugins import registry
from kubesalvo.core.plugins.burst_packing import BurstPackingArgs
from kubesalvo.core.plugins.framework import RESERVE, ProfileError
from kubesalvo.sched.config import ConfigError, gates, parse_config
from kubesalvo.sched.simulate.cli import _profile

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
ENABLED = """\
profiles:
- schedulerName: packed
  plugins:
    reserve:
      enabled: [{name: BurstPacking}]
  pluginConfig:
  - name: BurstPacking
    args: ARGS
"""


def _config(args: str = "{}", enabled: str = ENABLED):
    return parse_config(HEADER + textwrap.dedent(enabled).replace("ARGS", args))


def test_burst_packing_is_a_reserve_plugin_with_args():
    assert registry.EXTENSION_POINTS["BurstPacking"] == frozenset({RESERVE})
    assert registry.ARGS["BurstPacking"] is BurstPackingArgs


def test_enabled_it_gives_the_profile_its_args():
    config = _config("{maxExactPods: 50, timeBudgetSeconds: 0.5, maxEmptiedNodes: 10}")
    assert config.profiles[0].core.packing == BurstPackingArgs(
        max_exact_pods=50, time_budget_seconds=0.5, max_emptied_nodes=10
    )
    assert _config().profiles[0].core.packing == BurstPackingArgs()


def test_configured_but_not_enabled_it_does_nothing():
    config = _config(
        "{maxExactPods: 5}",
        "profiles:\n- pluginConfig:\n  - {name: BurstPacking, args: ARGS}\n",
    )
    assert config.profiles[0].core.packing is None
    assert any("no effect" in note for note in config.notes)


def test_its_args_are_checked_with_their_field_paths():
    with pytest.raises(ConfigError) as info:
        _config("{maxExactPods: -1, timeBudgetSeconds: 0}")
    paths = info.value.paths
    assert "profiles[0].pluginConfig[0].args.maxExactPods" in paths
    assert "profiles[0].pluginConfig[0].args.timeBudgetSeconds" in paths
    assert "must not be negative" in str(info.value)
    with pytest.raises(ConfigError) as info:
        _config("{timeBudget: 1}")
    assert info.value.paths == ["profiles[0].pluginConfig[0].args.timeBudget"]
    with pytest.raises(ProfileError, match="timeBudgetSeconds"):
        BurstPackingArgs(time_budget_seconds=61)


def test_simulate_strategy_keeps_burst_packing(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(HEADER + ENABLED.replace("ARGS", "{maxExactNodes: 7}"))
    args = argparse.Namespace(
        config=str(path), strategy="MostAllocated", feature_gates=gates.FeatureGates()
    )
    assert _profile(args).packing == BurstPackingArgs(max_exact_nodes=7)


def test_without_scipy_the_exact_solve_is_refused_at_start(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "scipy" else real(name, *a)
    )
    with pytest.raises(ProfileError, match=r"needs scipy.*maxExactPods to 0"):
        BurstPackingArgs()
    assert BurstPackingArgs(max_exact_pods=0).max_exact_pods == 0  # the moves need no scipy


def test_multi_point_enables_it_and_the_score_point_refuses_it():
    multi = "profiles:\n- plugins: {multiPoint: {enabled: [{name: BurstPacking}]}}\n"
    assert parse_config(HEADER + multi).profiles[0].core.packing == BurstPackingArgs()
    with pytest.raises(ConfigError, match="does not extend ScorePlugin"):
        parse_config(HEADER + "profiles:\n- plugins: {score: {enabled: [{name: BurstPacking}]}}\n")
