"""Metric names, labels and buckets as kube-scheduler exports them."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesalvo.sched.metrics import InformerCollector, SchedulerMetrics, exponential_buckets


def families(metrics: SchedulerMetrics) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(metrics.render().decode())}


def test_kube_scheduler_metric_names_are_exported():
    names = set(families(SchedulerMetrics()))
    assert {
        "scheduler_schedule_attempts",
        "scheduler_scheduling_attempt_duration_seconds",
        "scheduler_scheduling_algorithm_duration_seconds",
        "scheduler_pending_pods",
        "scheduler_pod_scheduling_sli_duration_seconds",
        "scheduler_pod_scheduling_attempts",
        "kubesalvo_burst_size",
        "kubesalvo_kernel_seconds",
    } <= names


def test_pending_pods_has_every_queue_from_the_start():
    pending = families(SchedulerMetrics())["scheduler_pending_pods"]
    assert {s.labels["queue"] for s in pending.samples} == {
        "active",
        "backoff",
        "unschedulable",
        "gated",
    }


def test_attempts_are_counted_by_result_and_profile():
    metrics = SchedulerMetrics()
    metrics.observe_attempt("scheduled", "default", 0.01)
    metrics.observe_attempt("scheduled", "default", 0.02)
    metrics.observe_attempt("unschedulable", "gpu", 0.03)
    samples = {
        (s.labels["result"], s.labels["profile"]): s.value
        for s in families(metrics)["scheduler_schedule_attempts"].samples
        if s.name.endswith("_total")
    }
    assert samples == {("scheduled", "default"): 2.0, ("unschedulable", "gpu"): 1.0}


def test_sli_duration_is_labelled_by_attempts():
    metrics = SchedulerMetrics()
    metrics.observe_scheduled_pod(attempts=3, sli_seconds=1.5)
    samples = families(metrics)["scheduler_pod_scheduling_sli_duration_seconds"].samples
    assert any(s.labels.get("attempts") == "3" for s in samples)


def test_attempt_duration_uses_kube_schedulers_buckets():
    metrics = SchedulerMetrics()
    metrics.observe_attempt("scheduled", "default", 0.001)
    buckets = [
        s.labels["le"]
        for s in families(metrics)["scheduler_scheduling_attempt_duration_seconds"].samples
        if s.name.endswith("_bucket")
    ]
    assert buckets[0] == "0.001" and len(buckets) == 16  # 15 bounds and +Inf
    assert exponential_buckets(1, 2, 5) == [1, 2, 4, 8, 16]


def test_two_schedulers_in_one_process_have_separate_metrics():
    first, second = SchedulerMetrics(), SchedulerMetrics()
    first.observe_burst(pods=100, kernel_seconds=0.01)
    assert b"kubesalvo_burst_size_count 1.0" in first.render()
    assert b"kubesalvo_burst_size_count 0.0" in second.render()


def test_informer_requests_are_read_at_each_scrape():
    metrics = SchedulerMetrics()
    counts = {"pods": (1, 1), "nodes": (1, 1)}
    metrics.registry.register(InformerCollector(lambda: [(r, *c) for r, c in counts.items()]))
    counts["pods"] = (2, 7)  # a 410 Gone relisted it; the server closed watches
    samples = {
        (s.name, s.labels["resource"]): s.value
        for name in ("kubesalvo_informer_lists", "kubesalvo_informer_watches")
        for s in families(metrics)[name].samples
    }
    assert samples == {
        ("kubesalvo_informer_lists_total", "pods"): 2.0,
        ("kubesalvo_informer_lists_total", "nodes"): 1.0,
        ("kubesalvo_informer_watches_total", "pods"): 7.0,
        ("kubesalvo_informer_watches_total", "nodes"): 1.0,
    }


def test_unschedulable_pods_count_each_queued_pod_once_per_plugin_and_profile():
    from kubesalvo.sched.metrics import UnschedulablePodsCollector

    metrics = SchedulerMetrics()
    queued = [
        ("kubesalvo", {"NodeAffinity", "TaintToleration"}),
        ("kubesalvo", {"NodeAffinity"}),
        ("other", {"NodeAffinity"}),
        ("kubesalvo", set()),  # waiting, no plugin to blame (a failed bind)
    ]
    metrics.registry.register(UnschedulablePodsCollector(lambda: queued))
    (family,) = [f for f in text_string_to_metric_families(metrics.render().decode())
                 if f.name == "scheduler_unschedulable_pods"]  # fmt: skip
    assert family.type == "gauge"
    values = {(s.labels["plugin"], s.labels["profile"]): s.value for s in family.samples}
    assert values == {
        ("NodeAffinity", "kubesalvo"): 2,
        ("TaintToleration", "kubesalvo"): 1,
        ("NodeAffinity", "other"): 1,
    }


def test_latency_stages_and_the_bind_use_their_own_histograms():
    metrics = SchedulerMetrics()
    metrics.observe_queue_waits([0.001, 0.003])
    metrics.observe_stage("kernel", 0.0005)
    metrics.observe_bind_post("default", in_flight=0.004, since_event=0.02)
    found = families(metrics)
    counts = {
        s.labels["stage"]: s.value
        for s in found["kubesalvo_stage_duration_seconds"].samples
        if s.name.endswith("_count")
    }
    assert counts == {"queue_wait": 2.0, "kernel": 1.0, "bind": 1.0}
    bind = [
        s
        for s in found["scheduler_framework_extension_point_duration_seconds"].samples
        if s.name.endswith("_bucket")
    ]
    # kube-scheduler's labels and buckets: 0.1 ms doubling twelve times, then +Inf.
    assert {
        (s.labels["extension_point"], s.labels["status"], s.labels["profile"]) for s in bind
    } == {("Bind", "Success", "default")}
    assert bind[0].labels["le"] == "0.0001" and len(bind) == 13
    whole = found["kubesalvo_pod_event_to_bind_seconds"].samples
    assert [s.value for s in whole if s.name.endswith("_sum")] == [pytest.approx(0.02)]


def test_every_labelled_series_counts_into_the_series_its_label_names_say():
    """The label children kept across calls sit in the series of their own label values,
    each value under its own name, as ``labels(name=value)`` would put them."""
    metrics = SchedulerMetrics()
    for _ in range(2):
        metrics.observe_attempt("scheduled", "p1", 0.01)
        metrics.observe_request("h1", "POST", "201", 0.1)
        metrics.observe_incoming("active", "PodAdd")
        metrics.observe_plugin("DefaultBinder", "Bind", "Success", 0.1)
        metrics.observe_bind_post("p1", 0.1, 0.2)
        metrics.count_bind("bound")
    metrics.observe_attempt("unschedulable", "p1", 0.01)
    metrics.observe_request("h1", "GET", "200", 0.1)

    def value(metric, **labels):
        return metric.labels(**labels)._value.get()

    assert value(metrics.schedule_attempts, result="scheduled", profile="p1") == 2
    assert value(metrics.schedule_attempts, result="unschedulable", profile="p1") == 1
    assert value(metrics.rest_client_requests, code="201", host="h1", method="POST") == 2
    assert value(metrics.rest_client_requests, code="200", host="h1", method="GET") == 1
    assert value(metrics.queue_incoming, queue="active", event="PodAdd") == 2
    assert value(metrics.binds, result="bound") == 2
    sums = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families(metrics).values()
        for s in f.samples
        if s.name.endswith("_count")
    }
    bind = (("extension_point", "Bind"), ("profile", "p1"), ("status", "Success"))
    assert sums["scheduler_framework_extension_point_duration_seconds_count", bind] == 2
    plugin = (("extension_point", "Bind"), ("plugin", "DefaultBinder"), ("status", "Success"))
    # two direct calls and two from each bind POST
    assert sums["scheduler_plugin_execution_duration_seconds_count", plugin] == 4
    verb = (("host", "h1"), ("verb", "POST"))
    assert sums["rest_client_request_duration_seconds_count", verb] == 2
