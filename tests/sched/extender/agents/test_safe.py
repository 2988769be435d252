"""The safe agent: predicted usage (mean + k x std + pods bound since the last sample)
against a threshold, from the node-annotation fallback (and NodeMetrics parsing)."""

from __future__ import annotations

import logging

import msgspec
import numpy as np
import pytest

from kubesalvo.sched.extender.agent import PodInfo
from kubesalvo.sched.extender.agents import usage
from kubesalvo.sched.extender.agents.safe import Safe, SafeArgs
from kubesalvo.sched.extender.feed import NodeFeed
from kubesalvo.sched.informers import ADDED, DELETED, MODIFIED, SYNCED, Change
from tests.helpers.extender import FakeClock, node, pod, typed

CPU = usage.CPU_ANNOTATION
MEM = usage.MEMORY_ANNOTATION


def setup(**args):
    clock = FakeClock()
    agent = Safe(SafeArgs(**args), clock=clock)
    feed = NodeFeed([agent], clock=clock)
    for name in ("hot", "cool", "blank"):
        feed.on_node_change(Change(ADDED, typed(node(name, cpu="10", memory="10Gi"))))
    feed.on_pod_change(Change(SYNCED))
    return clock, agent, feed


def sample(feed, name, cpu, memory="1Gi", rv=None):
    rv = rv or str(len(feed.state.names) + np.random.randint(1 << 30))
    annotated = node(name, cpu="10", memory="10Gi", annotations={CPU: cpu, MEM: memory}, rv=rv)
    feed.on_node_change(Change(MODIFIED, typed(annotated)))


def small():
    return PodInfo(typed(pod(cpu="500m", memory="100Mi")))


def test_a_node_whose_predicted_usage_passes_the_threshold_is_filtered():
    _, agent, feed = setup(threshold=0.8, k=1.0)
    row = feed.state.row_of
    for cpu in ("6", "8"):  # mean 7 cores, std 1: predicted 8 of 10, +0.5 for the pod
        sample(feed, "hot", cpu)
    sample(feed, "cool", "1")
    verdict = agent.filter(feed.state, small())
    assert verdict.codes[row["hot"]] == 1
    assert verdict.reason(1) == "predicted cpu usage would pass the safe threshold"
    assert verdict.codes[row["cool"]] == 0 and verdict.codes[row["blank"]] == 0
    scores = agent.score(feed.state, small())
    assert scores[row["hot"]] == 0.0
    assert scores[row["cool"]] == pytest.approx((0.8 - 0.15) / 0.8)
    assert scores[row["blank"]] == 0.5  # no sample: neither filtered nor favoured


def test_memory_counts_too():
    _, agent, feed = setup(threshold=0.5, k=0.0)
    sample(feed, "hot", "1", "6Gi")
    assert agent.filter(feed.state, small()).codes[feed.state.row_of["hot"]] == 2


def test_pods_bound_since_the_last_sample_count_until_the_next_one():
    _, agent, feed = setup(threshold=0.8, k=0.0)
    row = feed.state.row_of["cool"]
    sample(feed, "cool", "5")
    assert agent.filter(feed.state, small()).codes[row] == 0
    burst = [typed(pod(f"b{i}", cpu="1", node_name="cool")) for i in range(3)]
    for bound in burst:
        feed.on_pod_change(Change(ADDED, bound))
    # 5 + 3 bound + 0.5 incoming = 8.5 of 10 > 8
    assert agent.filter(feed.state, small()).codes[row] == 1
    feed.on_pod_change(Change(DELETED, burst[0]))  # gone before the next sample
    assert agent.filter(feed.state, small()).codes[row] == 0
    feed.on_pod_change(Change(ADDED, typed(pod("b9", cpu="1", node_name="cool"))))
    sample(feed, "cool", "5500m")  # the next sample includes them
    assert agent.filter(feed.state, small()).codes[row] == 0


def test_the_window_keeps_only_the_last_samples():
    _, agent, feed = setup(window=2, k=0.0, threshold=0.8)
    row = feed.state.row_of["hot"]
    for cpu in ("9", "1", "1000m"):
        sample(feed, "hot", cpu)
    predicted, known = agent.predicted(feed.state)
    assert known[row] and predicted[row, 0] == pytest.approx(1000)


def test_with_no_usage_anywhere_it_says_so_once_and_filters_nothing(caplog):
    _, agent, feed = setup()
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert not agent.filter(feed.state, small()).codes.any()
            assert agent.score(feed.state, small()) is None
    warnings = [r for r in caplog.records if "no node usage known" in r.getMessage()]
    assert len(warnings) == 1


def test_unreadable_annotations_are_ignored_with_one_warning(caplog):
    _, agent, feed = setup()
    with caplog.at_level(logging.WARNING):
        sample(feed, "hot", "lots")
        sample(feed, "hot", "many")
    assert not agent.count.view(feed.state.rows).any()
    assert len([r for r in caplog.records if "not quantities" in r.getMessage()]) == 1


def test_a_node_update_without_new_annotation_text_is_not_a_sample():
    _, agent, feed = setup()
    row = feed.state.row_of["hot"]
    sample(feed, "hot", "2", rv="10")
    sample(feed, "hot", "2", rv="11")  # a heartbeat: same text
    assert agent.count.view(feed.state.rows)[row] == 1


def test_annotations_are_ignored_while_the_metrics_api_answers():
    _, agent, feed = setup()
    agent.metrics_live = True
    sample(feed, "hot", "9")
    assert not agent.count.view(feed.state.rows).any()


def test_node_metrics_lists_parse_into_millicores_and_bytes():
    body = msgspec.json.encode(
        {
            "kind": "NodeMetricsList",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "items": [
                {
                    "metadata": {"name": "a"},
                    "timestamp": "2026-01-01T00:00:00Z",
                    "window": "10s",
                    "usage": {"cpu": "1500m", "memory": "2Gi"},
                },
                {"metadata": {"name": "b"}, "usage": {"cpu": "lots"}},
            ],
        }
    )
    assert usage.parse_node_metrics(body) == {"a": (1500, 2 * 1024**3)}


@pytest.mark.parametrize("field", [{"threshold": 1.5}, {"window": 0}, {"k": -1.0}])
def test_bad_settings_are_refused(field):
    with pytest.raises(ValueError):
        SafeArgs(**field)
