"""The README's two fresh-machine commands stay true: CI runs each verbatim, in a venv of its
own, before anything else is installed into that venv."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAIN_JOB, TESTS = 0, 1


def _readme_commands() -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", (ROOT / "README.md").read_text())


def _ci_lines() -> list[str]:
    return [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]


def test_readme_starts_with_the_main_job_and_the_test_command():
    commands = _readme_commands()
    assert len(commands) >= 2
    assert "kubesalvo simulate" in commands[MAIN_JOB]
    assert "pytest" in commands[TESTS]


def test_ci_runs_the_readme_test_command_verbatim():
    assert _readme_commands()[TESTS] in _ci_lines()


def test_ci_runs_the_readme_main_job_command_verbatim():
    assert _readme_commands()[MAIN_JOB] in _ci_lines()


def test_each_readme_command_runs_first_in_a_fresh_venv():
    lines = _ci_lines()
    for command in _readme_commands()[:2]:
        at = lines.index(command)
        # Walk back to the venv this command runs in: nothing may install into it first.
        before = lines[:at]
        venv = max(i for i, line in enumerate(before) if line == "fresh_venv")
        between = [line for line in before[venv + 1 :] if not line.startswith("#")]
        assert not [line for line in between if "install" in line], (command, between)


def test_the_first_install_in_ci_is_a_readme_command():
    installs = [line for line in _ci_lines() if "pip install" in line and not line.startswith("#")]
    assert installs[0] in _readme_commands()[:2]
