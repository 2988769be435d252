"""``kubesalvo bench`` refuses what it cannot run before starting anything."""

from __future__ import annotations

import sys

import pytest

from kubesalvo.sched.cli import main


@pytest.mark.parametrize(
    ("argument", "expected"),
    [
        ("--schedulers=kubesalvo,nope", "--schedulers 'kubesalvo,nope'"),
        ("--schedulers=kubesalvo,kubesalvo", "at most once"),
        ("--workload=no-such-thing", "unknown workload 'no-such-thing'"),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(
    argument: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", argument]) == 2
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
