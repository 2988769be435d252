"""``kubesalvo bench`` refuses what it cannot run before starting anything."""

from __future__ import annotations

import os
import sys

import pytest

from kubesalvo.sched.cli import main


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        ("--schedulers=kubesalvo,nope", "--schedulers 'kubesalvo,nope'"),
        ("--schedulers=kubesalvo,kubesalvo", "at most once"),
        ("--workload=no-such-thing", "unknown workload 'no-such-thing'"),
        ("--kubernetes=v1.99.0", "no shipped module pins it; accepted: v1.34.4, v1.37.2"),
        ("--rate=0", "--rate '0': give pods per second"),
        ("--rates=25", "--rates '25': give percentages of the raw-bind ceiling"),
        ("--duration=-3", "--duration -3.0: give a positive number"),
        ("--rate=5 --mode=backlog", "--mode backlog does not apply"),
        ("--rate=5 --workload=basic", "basic creates deployments"),
        ("--fresh --workload=hpa", "--fresh applies to stream, backlog, --rate and --rates"),
        ("--repeat=0", "--repeat 0: give a number of rounds, 1 or more"),
        ("--repeat=2 --workload=hpa", "--repeat applies to stream, backlog, --rate and --rates"),
        ("--scheduler-cpus=one", "give CPU numbers and ranges, e.g. 1 or 0,2 or 2-3"),
        ("--scheduler-cpus=3-1", "give CPU numbers and ranges"),
        ("--scheduler-cpus=100000", "pick among the CPUs this process may use"),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(
    argument: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", *argument.split()]) == 2
    assert expected in capsys.readouterr().err


def test_without_matplotlib_it_says_which_extra_before_starting_anything(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A None entry in sys.modules makes the package unimportable, as if not installed.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "results"
    assert main(["bench", f"--out={out}"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "error: kubesalvo bench needs matplotlib, which is not installed: "
        "pip install 'kubesalvo[bench]'"
    ]
    assert not out.exists()  # no control plane, no results folder: nothing was started


def test_scheduler_cpus_must_leave_the_control_plane_some(
    capsys: pytest.CaptureFixture[str],
) -> None:
    usable = ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0)))
    assert main(["bench", f"--scheduler-cpus={usable}"]) == 2
    assert "leaves no CPU for the control plane" in capsys.readouterr().err


def test_a_stateful_workload_is_created_as_bare_pods_only(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "stateful-deployments.yaml"
    scenario.write_text(
        "name: s\nfleet: {nodes: 2}\nworkloads: [{shape: stateful, pods: 2}]\n"
        "bench: {create: deployments}\n"
    )
    assert main(["bench", f"--workload={scenario}"]) == 2
    assert "a stateful workload is created as bare pods and claims (create: pods)" in (
        capsys.readouterr().err
    )
