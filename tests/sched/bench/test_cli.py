"""``kubesalvo bench`` refuses what it cannot run before starting anything."""

from __future__ import annotations

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
