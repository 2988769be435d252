"""``--feature-gates``: kube-scheduler's syntax and error texts, the one gate kubesalvo
models (StorageCapacityScoring), every other gate refused with the known list, and
VolumeBindingArgs' ``shape`` accepted, defaulted and validated as upstream does with the
gate on, refused with it off."""

import argparse

import pytest

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.node_resources_fit import ShapePoint
from kubesalvo.sched import app
from kubesalvo.sched.config import ConfigError, default_config, gates, parse_config
from kubesalvo.sched.simulate import cli as simulate_cli

ON = gates.FeatureGates(storage_capacity_scoring=True)
HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
ARGS = "profiles[0].pluginConfig[0].args"


def volume_binding(args: str, gate: gates.FeatureGates | None) -> object:
    text = HEADER + f"profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args: {args}\n"
    return parse_config(text, gates=gate).profiles[0].core.args_of(names.VOLUME_BINDING)


def test_the_gate_is_off_by_default_as_in_v1_34():
    assert gates.parse("") == gates.FeatureGates()
    assert not gates.FeatureGates().storage_capacity_scoring


@pytest.mark.parametrize("value", ["StorageCapacityScoring=true", " StorageCapacityScoring = 1 ,"])
def test_the_flag_turns_the_gate_on_in_kube_scheduler_syntax(value):
    assert gates.parse(value) == ON


def test_a_later_item_wins():
    assert (
        gates.parse("StorageCapacityScoring=true,StorageCapacityScoring=false")
        == gates.FeatureGates()
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("StorageCapacityScoring", "missing bool value for StorageCapacityScoring"),
        (
            "StorageCapacityScoring=yes",
            "invalid value of StorageCapacityScoring=yes, err: strconv.ParseBool: "
            'parsing "yes": invalid syntax',
        ),
        (
            "SchedulerQueueingHints=true",
            "unrecognized feature gate: SchedulerQueueingHints (kubesalvo models only: "
            "StorageCapacityScoring)",
        ),
    ],
)
def test_a_malformed_or_unmodelled_gate_is_refused_with_upstreams_text(value, text):
    with pytest.raises(gates.FeatureGateError) as info:
        gates.parse(value)
    assert str(info.value) == text


@pytest.mark.parametrize("configure", [app.configure, simulate_cli.configure])
def test_run_and_simulate_refuse_an_unknown_gate_at_start(configure, capsys):
    parser = argparse.ArgumentParser(prog="kubesalvo")
    configure(parser)
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--feature-gates", "Foo=true"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert 'invalid argument "Foo=true" for "--feature-gates" flag' in err
    assert "unrecognized feature gate: Foo" in err
    assert parser.parse_args(["--feature-gates", "StorageCapacityScoring=true"]).feature_gates == ON


def test_with_the_gate_on_the_default_profile_gets_upstreams_default_shape():
    args = default_config(ON).profiles[0].core.args_of(names.VOLUME_BINDING)
    assert args.shape == (ShapePoint(0, 10), ShapePoint(100, 0))
    assert default_config().profiles[0].core.args_of(names.VOLUME_BINDING).shape == ()


def test_with_the_gate_on_an_empty_shape_is_defaulted_and_a_given_one_kept():
    assert volume_binding("{shape: []}", ON).shape == (ShapePoint(0, 10), ShapePoint(100, 0))
    given = volume_binding(
        "{shape: [{utilization: 10, score: 2}, {utilization: 90, score: 9}]}", ON
    )
    assert given.shape == (ShapePoint(10, 2), ShapePoint(90, 9))


def test_with_the_gate_on_a_shape_is_validated_at_upstreams_paths():
    with pytest.raises(ConfigError) as info:
        volume_binding(
            "{shape: [{utilization: 50, score: 3}, {utilization: 40, score: 11}, "
            "{utilization: 101, score: 1}]}",
            ON,
        )
    found = {(e.path, e.value, e.detail) for e in info.value.errors}
    assert found == {
        (f"{ARGS}.shape[1].utilization", 40, "values must be sorted in increasing order"),
        (f"{ARGS}.shape[1].score", 11, "not in valid range [0, 10]"),
        (f"{ARGS}.shape[2].utilization", 101, "not in valid range [0, 100]"),
    }


def test_with_the_gate_off_a_shape_is_refused():
    with pytest.raises(ConfigError) as info:
        volume_binding("{shape: [{utilization: 0, score: 0}]}", None)
    (problem,) = info.value.errors
    assert problem.path == f"{ARGS}.shape"
    assert problem.detail == (
        "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"
    )
