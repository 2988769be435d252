"""A plugin is accepted at an extension point only where kubesalvo really runs it.

What a plugin implements comes from the registry (its ``PluginSpec`` points) and, for a
queue sort, from the queue's table of sort keys; nothing here lists plugins by hand, so
the expectations are computed from the same sources. A refused file exits 2 from ``run``
and ``simulate`` with the plugin, the point and the accepted plugins, never a traceback;
a plugin that registers a point (and its sort key) is accepted there with no other change.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kubesalvo.core.plugins import framework, names, registry
from kubesalvo.sched.config import ErrorKind, parse_config
from kubesalvo.sched.config.plugins import POINTS, implements
from kubesalvo.sched.queue.sorting import QUEUE_SORTS
from tests.sched.test_config_errors import HEADER, error_at, refused

# The user's QosAware profile of issue 11, exactly as written there.
QOS_PROFILE = """\
profiles:
- schedulerName: kubesalvo
  plugins:
    queueSort: {enabled: [{name: QosAware}], disabled: [{name: "*"}]}
    preBind:   {enabled: [{name: QosAware}]}
    postBind:  {enabled: [{name: QosAware}]}
"""


def runs_at(point: str) -> list[str]:
    """The plugins kubesalvo runs at ``point``, from the registry and the sort keys."""
    return sorted(
        name
        for name, points in registry.EXTENSION_POINTS.items()
        if point in points and (point != framework.QUEUE_SORT or name in QUEUE_SORTS)
    )


def not_at(point: str) -> str:
    """A known plugin that kubesalvo does not run at ``point``."""
    return next(n for n in sorted(registry.EXTENSION_POINTS) if n not in runs_at(point))


def points_body(point: str, name: str) -> str:
    # A second queue sort would be refused for that reason alone: clear the default one.
    extra = ', disabled: [{name: "*"}]' if point == framework.QUEUE_SORT else ""
    return f"profiles:\n- plugins: {{{point}: {{enabled: [{{name: {name}}}]{extra}}}}}\n"


@pytest.mark.parametrize("point", POINTS)
def test_a_plugin_not_run_at_a_point_is_refused_with_the_point_and_what_is_accepted(
    point: str,
) -> None:
    name = not_at(point)
    err = refused(points_body(point, name))
    e = error_at(err, f"profiles[0].plugins.{point}.enabled[0].name")
    assert e.kind is ErrorKind.UNSUPPORTED and e.value == name
    assert list(e.accepted) == runs_at(point)
    text = str(err)
    assert name in text and f"plugins.{point}" in text
    if not runs_at(point):
        assert f"no plugin runs at {point}" in e.detail


@pytest.mark.parametrize("point", POINTS)
def test_every_plugin_run_at_a_point_is_accepted_there(point: str) -> None:
    accepted = runs_at(point)
    assert accepted == [n for n in sorted(registry.EXTENSION_POINTS) if implements(n, point)]
    for name in accepted:
        body = points_body(point, name)
        if point == framework.BIND:
            body = f"profiles:\n- plugins: {{bind: {{enabled: [{{name: {name}}}]}}}}\n"
        config = parse_config(HEADER + body)
        assert name in config.profiles[0].plugins.at(point), (point, name)


def test_the_issues_qos_profile_loads_unchanged() -> None:
    plugins = parse_config(HEADER + QOS_PROFILE).profiles[0].plugins
    assert plugins.at(framework.QUEUE_SORT) == (names.QOS_AWARE,)
    for point in (framework.PRE_BIND, framework.POST_BIND):
        assert names.QOS_AWARE in plugins.at(point)


def test_a_queue_sort_the_registry_lists_without_a_sort_key_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GroupPriority's registry entry names queueSort; without its key in the queue (as
    # before its module registered one) the file is refused, naming what is accepted.
    monkeypatch.delitem(QUEUE_SORTS, names.GROUP_PRIORITY, raising=False)
    err = refused(points_body(framework.QUEUE_SORT, names.GROUP_PRIORITY))
    e = error_at(err, "profiles[0].plugins.queueSort.enabled[0].name")
    assert "no queueSort implementation" in e.detail
    assert names.PRIORITY_SORT in e.accepted and names.GROUP_PRIORITY not in e.accepted


def test_a_plugin_is_accepted_at_the_points_it_registers(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the qos helper's registration does: points in the registry, a sort key."""
    points = frozenset({framework.QUEUE_SORT, framework.PRE_BIND, framework.POST_BIND})
    monkeypatch.setitem(registry.EXTENSION_POINTS, names.QOS_AWARE, points)
    monkeypatch.setitem(QUEUE_SORTS, names.QOS_AWARE, lambda qp: (qp.timestamp,))
    plugins = parse_config(HEADER + QOS_PROFILE).profiles[0].plugins
    for point in points:
        assert names.QOS_AWARE in plugins.at(point)
    assert plugins.at(framework.QUEUE_SORT) == (names.QOS_AWARE,)


def test_multipoint_expanding_into_a_point_kubesalvo_lacks_names_the_entry_and_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(QUEUE_SORTS, names.GROUP_PRIORITY, raising=False)
    err = refused(
        """
        profiles:
        - plugins:
            multiPoint:
              enabled: [{name: ImageLocality}, {name: GroupPriority}]
              disabled: [{name: PrioritySort}]
        """
    )
    e = error_at(err, "profiles[0].plugins.multiPoint.enabled[1].name")
    assert e.value == names.GROUP_PRIORITY
    assert "multiPoint expands it into profiles[0].plugins.queueSort" in e.detail
    assert list(e.accepted) == runs_at(framework.QUEUE_SORT)
    # The other entry is fine and is not blamed.
    assert "profiles[0].plugins.multiPoint.enabled[0].name" not in err.paths

    monkeypatch.setitem(QUEUE_SORTS, names.GROUP_PRIORITY, lambda qp: (qp.timestamp,))
    config = parse_config(
        HEADER
        + textwrap.dedent(
            """
            profiles:
            - plugins:
                multiPoint:
                  enabled: [{name: GroupPriority}]
                  disabled: [{name: PrioritySort}]
            """
        )
    )
    assert config.profiles[0].queue_sort == names.GROUP_PRIORITY


def test_multipoint_into_a_point_kept_clear_by_star_is_not_blamed_on_the_plugin() -> None:
    # '*' at queueSort keeps every multiPoint plugin out of it: GroupPriority never
    # reaches queueSort, so the only error is the empty queue sort.
    err = refused(
        """
        profiles:
        - plugins:
            multiPoint: {enabled: [{name: Coscheduling}]}
            queueSort: {disabled: [{name: "*"}]}
        """
    )
    assert err.paths == ["profiles[0].plugins.queueSort"], err.paths


def test_multipoint_plugin_that_runs_nowhere_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.EXTENSION_POINTS, names.NODE_POOL, frozenset())
    err = refused("profiles:\n- plugins: {multiPoint: {enabled: [{name: NodePool}]}}\n")
    e = error_at(err, "profiles[0].plugins.multiPoint.enabled[0].name")
    assert "implements no extension point" in e.detail
    assert names.NODE_POOL not in e.accepted and names.IMAGE_LOCALITY in e.accepted


@pytest.mark.parametrize("command", ["run", "simulate"])
def test_commands_exit_2_on_a_plugin_at_a_point_it_lacks_without_traceback(
    command: str, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(HEADER + points_body(framework.PRE_BIND, names.IMAGE_LOCALITY))
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", command, "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "profiles[0].plugins.preBind.enabled[0].name" in done.stderr
    assert '"ImageLocality"' in done.stderr and "PreBindPlugin" in done.stderr
    for name in runs_at(framework.PRE_BIND):
        assert f'"{name}"' in done.stderr
