"""The per-node evaluator runs each plugin through its spec's contributions (its own
per-node Filter and Score, or its static functions): it names no plugin, and a plugin
added to the registry is reached without it."""

from __future__ import annotations

import ast
import inspect

from kubesalvo.core.pernode import evaluator
from kubesalvo.core.pernode.evaluator import PodEvaluator
from kubesalvo.core.plugins import names, registry
from kubesalvo.core.plugins.node_pool import ERR_REASON_NODE_POOL
from kubesalvo.core.profile import Profile

POOL = "kubesalvo.io/pool"


def node(name, **labels):
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
    }


def pod(name, labels=None):
    return {
        "metadata": {"name": name, "namespace": "default", "uid": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }


def test_the_evaluator_names_no_plugin():
    tree = ast.parse(inspect.getsource(evaluator))
    plugin_names = set(registry.PLUGINS)
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    assert not plugin_names & strings
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    constants = {k for k, v in vars(names).items() if k.isupper() and v in plugin_names}
    assert not constants & attributes


def test_the_evaluator_runs_a_registry_filter_plugin_from_its_spec():
    fleet = [node("gpu-0", **{POOL: "gpu"}), node("plain-0")]
    pooled = Profile(filters=(*registry.DEFAULT_FILTER_ORDER, names.NODE_POOL))
    ev = PodEvaluator(fleet, profile=pooled)
    assert ev.filter(pod("p", {POOL: "gpu"})) == {
        "gpu-0": [],
        "plain-0": [ERR_REASON_NODE_POOL],
    }
    # Without the plugin in the profile, both nodes fit.
    assert PodEvaluator(fleet).filter(pod("p", {POOL: "gpu"})) == {"gpu-0": [], "plain-0": []}


def test_the_evaluator_runs_a_registry_score_plugin_from_its_spec():
    fleet = [node("avoided", **{"kubesalvo.io/avoid": ""}), node("plain")]
    weighted = Profile(scores=((names.NODE_LABEL_PREFERENCE, 3),))
    scores = PodEvaluator(fleet, profile=weighted).scores(pod("p"))
    avoided = scores["avoided"][names.NODE_LABEL_PREFERENCE]
    plain = scores["plain"][names.NODE_LABEL_PREFERENCE]
    assert avoided < plain
    assert plain % 3 == 0
