"""The ``kubesalvo`` command line: one table of subcommands, each imported only when used.

A subcommand module exposes ``configure(parser)`` to declare its arguments and
``main(args) -> int`` to run; importing it lazily keeps ``kubesalvo --help`` fast and keeps
heavy imports (numpy, aiohttp) out of commands that do not need them. A module that needs a
package of an optional extra names it in ``OPTIONAL_DEPENDENCIES`` (import name -> extra):
the command checks them before it starts anything, so that a missing one costs one line
and exit code 2, not a run that fails at its end.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import sys
from collections.abc import Sequence

# name -> (module, one-line help). Only commands that exist are listed here.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("kubesalvo.sched.app", "run the scheduler against a Kubernetes API server"),
    "explain": (
        "kubesalvo.sched.explain",
        "why a pod is pending, or where it went and each plugin's score",
    ),
    "snapshot": (
        "kubesalvo.sched.snapshot.record",
        "record a cluster's nodes and pods for `kubesalvo simulate --snapshot`",
    ),
    "cluster": (
        "kubesalvo.sched.cluster.cli",
        "build, start and stop a local control plane with fake kwok nodes",
    ),
    "simulate": (
        "kubesalvo.sched.simulate",
        "place a synthetic (or snapshot) cluster's burst in-process, no API server needed",
    ),
    "extender": (
        "kubesalvo.sched.extender.cli",
        "serve kube-scheduler's extender protocol (filter, prioritize, bind, preempt)",
    ),
    "image-reporter": (
        "kubesalvo.sched.image_reporter.cli",
        "node agent: write the node's images (from the container runtime) into its Node",
    ),
    "bench": (
        "kubesalvo.sched.bench.cli",
        "schedulers side by side on one real control plane: pods/s, latency, CPU seconds",
    ),
}


def version() -> str:
    """The installed distribution's version (pyproject.toml's, as pip recorded it)."""
    try:
        return importlib.metadata.version("kubesalvo")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported to declare its arguments."""
    parser = argparse.ArgumentParser(
        prog="kubesalvo",
        description="A Kubernetes scheduler that places whole bursts of pods in compiled kernels.",
    )
    parser.add_argument("--version", action="version", version=f"kubesalvo {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        child = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = importlib.import_module(module_name)
            module.configure(child)
            requires = getattr(module, "OPTIONAL_DEPENDENCIES", {})
            child.set_defaults(_main=module.main, _requires=requires)
    return parser


def missing_dependency(command: str, requires: dict[str, str]) -> str | None:
    """The one-line complaint about the first optional package of ``command`` that is not
    installed, or None when all are."""
    for package, extra in requires.items():
        try:
            found = importlib.util.find_spec(package) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return (
                f"error: kubesalvo {command} needs {package}, which is not installed: "
                f"pip install 'kubesalvo[{extra}]'"
            )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    args = build_parser(command).parse_args(argv)
    complaint = missing_dependency(args.command, args._requires)
    if complaint is not None:
        print(complaint, file=sys.stderr)
        return 2
    try:
        return int(args._main(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
