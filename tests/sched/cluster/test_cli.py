"""``kubesalvo cluster`` refuses a Kubernetes release no shipped module pins, before
building or starting anything, and lists the ones it can build."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesalvo.sched.cli import main


@pytest.mark.parametrize("action", ["build", "up"])
def test_an_unshipped_release_exits_2_naming_the_shipped_ones(
    action: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["cluster", action, "--kubernetes", "v1.99.0"]
    if action == "up":
        argv += ["--dir", str(tmp_path / "cp")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--kubernetes v1.99.0: no shipped module pins it; accepted: v1.34.4, v1.37.2" in err
    assert not (tmp_path / "cp").exists()


def test_help_names_each_release(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["cluster", "build", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "v1.34.4 (default, what the tests use) or v1.37.2" in out
