"""deploy/README.md stays true: it calls nothing missing that exists, and what it names exists.

Kept simple on purpose: stale phrases that once said a feature was missing must not come
back; every `kubesalvo COMMAND` it shows is a command; every file or folder it names is in
the repository; every metric it names is exported, except those it says are not, which
must indeed not be.
"""

from __future__ import annotations

import re

import pytest

from kubesalvo.sched.cli import SUBCOMMANDS
from kubesalvo.sched.extender.metrics import ExtenderMetrics
from kubesalvo.sched.gangs import GangBook, GangCollector
from kubesalvo.sched.metrics import InformerCollector, SchedulerMetrics
from kubesalvo.sched.qos import QosCollector, QosTable
from kubesalvo.sched.queue import SchedulingQueue
from tests.helpers.deploy import DEPLOY, REPO

README = DEPLOY / "README.md"

# Each once said that something which now exists was missing or unfinished.
STALE = [
    "is being written",
    "not there yet",
    "until it lands",
    "cannot start",
]
METRIC = re.compile(r"\b(?:kubesalvo|scheduler|rest_client|leader_election)_[a-z_]+[a-z]\b")
# A clause that says metrics are not exported runs to the end of its parenthesis/sentence.
NOT_EXPORTED = re.compile(r"does not export([^;).]*)")
# Slashed names in backticks that are not paths: the Lease (namespace/name).
NOT_PATHS = {"kubesalvo/kubesalvo"}
SUFFIXES = ("_total", "_bucket", "_count", "_sum", "_created")


def text() -> str:
    """The README with its line breaks folded, so that phrases across lines are found."""
    return " ".join(README.read_text().split())


def exported() -> set[str]:
    metrics = SchedulerMetrics()
    metrics.registry.register(QosCollector(QosTable()))
    metrics.registry.register(InformerCollector(list))
    metrics.registry.register(GangCollector(GangBook(SchedulingQueue())))
    names = {family.name for family in metrics.registry.collect()}
    names |= {family.name for family in ExtenderMetrics().registry.collect()}
    return names


def base_name(name: str) -> str:
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


@pytest.mark.parametrize("phrase", STALE)
def test_no_stale_phrase_says_an_existing_feature_is_missing(phrase):
    assert phrase not in text()


def test_not_proven_does_not_list_the_extender_which_is_tested():
    (not_proven,) = re.findall(r"Not proven:([^.]*)\.", text())
    assert "extender" not in not_proven


def test_every_kubesalvo_command_shown_exists():
    commands = set(re.findall(r"`kubesalvo ([a-z-]+)", text()))
    assert commands, "the README shows no command at all"
    assert commands <= set(SUBCOMMANDS), commands - set(SUBCOMMANDS)


def test_every_path_named_exists():
    named = set(re.findall(r"`((?:[\w.-]+/)+[\w.-]*)`", text()))
    named |= set(re.findall(r"\b(tests/[\w/.-]+\w)", text()))
    missing = [
        path
        for path in sorted(named - NOT_PATHS)
        if not any((root / path).exists() for root in (DEPLOY, REPO))
        and not path.startswith(("/", "kubescheduler.config", "scheduling.x-k8s.io"))
        and "example.com" not in path
    ]
    assert not missing, missing


def test_every_metric_named_is_exported_unless_it_says_otherwise():
    readme = text()
    absent = {name for clause in NOT_EXPORTED.findall(readme) for name in METRIC.findall(clause)}
    named = set(METRIC.findall(readme)) - absent
    have = exported()
    assert named, "the README names no metric at all"
    assert not [n for n in sorted(named) if base_name(n) not in have]
    assert not [n for n in sorted(absent) if base_name(n) in have]
