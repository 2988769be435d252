"""The command line lists every subcommand and imports only the one that runs."""

import subprocess
import sys

from kubesalvo.sched import cli


def test_help_lists_every_subcommand(capsys):
    try:
        cli.main(["--help"])
    except SystemExit as exit_:
        assert exit_.code == 0
    out = capsys.readouterr().out
    for name in cli.SUBCOMMANDS:
        assert name in out


def test_help_imports_no_subcommand_module():
    code = (
        "import sys\n"
        "from kubesalvo.sched import cli\n"
        "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m, _ in cli.SUBCOMMANDS.values() if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, cwd="/")


def test_unknown_subcommand_is_an_error():
    try:
        cli.main(["no-such-command"])
    except SystemExit as exit_:
        assert exit_.code == 2
    else:
        raise AssertionError("an unknown subcommand must exit with code 2")


def test_version_prints_the_installed_version_and_exits_0():
    import importlib.metadata

    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"kubesalvo {importlib.metadata.version('kubesalvo')}"
