"""The API server's counters read into per-pod traffic (bench.apitraffic)."""

from __future__ import annotations

from kubesalvo.sched.bench import apitraffic

# Lines as kube-apiserver v1.37 writes them (labels abridged where they do not matter).
BEFORE = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",group="",resource="pods",subresource="binding",verb="POST"} 100
apiserver_request_total{code="409",group="",resource="pods",subresource="binding",verb="POST"} 2
apiserver_request_total{code="200",group="",resource="pods",subresource="",verb="WATCH"} 3
apiserver_request_total{code="200",group="",resource="nodes",subresource="",verb="LIST"} 4
apiserver_request_total_other{verb="POST"} 5
apiserver_watch_events_total{group="",resource="pods"} 700
apiserver_watch_events_total{group="apps",resource="replicasets"} 10
apiserver_watch_events_sizes_count{group="",resource="pods"} 700
apiserver_terminated_watchers_total{group="",resource="pods"} 2
"""
AFTER = """\
apiserver_request_total{code="201",group="",resource="pods",subresource="binding",verb="POST"} 300
apiserver_request_total{code="409",group="",resource="pods",subresource="binding",verb="POST"} 2
apiserver_request_total{code="201",group="",resource="events",subresource="",verb="POST"} 1
apiserver_request_total{code="200",group="",resource="pods",subresource="",verb="WATCH"} 3
apiserver_request_total{code="200",group="",resource="nodes",subresource="",verb="LIST"} 4
apiserver_watch_events_total{group="",resource="pods"} 1500
apiserver_watch_events_total{group="apps",resource="replicasets"} 10
apiserver_terminated_watchers_total{group="",resource="pods"} 14
"""


def test_counts_sum_requests_by_verb_and_resource_and_watch_events_by_resource() -> None:
    assert apitraffic.counts(BEFORE) == {
        "POST pods/binding": 102.0,  # every code
        "WATCH pods": 3.0,
        "LIST nodes": 4.0,
        "watch events: pods": 700.0,
        "watch events: replicasets": 10.0,
        "terminated watchers: pods": 2.0,
    }
    # Releases that label watch events by kind.
    older = 'apiserver_watch_events_total{group="apps",kind="ReplicaSet"} 20'
    assert apitraffic.counts(older) == {"watch events: replicaset": 20.0}


def test_per_pod_is_what_the_window_added_largest_first_without_crumbs() -> None:
    before, after = apitraffic.counts(BEFORE), apitraffic.counts(AFTER)
    traffic = apitraffic.per_pod(before, after, 200)
    assert traffic == {
        "watch events: pods": 4.0,
        "POST pods/binding": 1.0,
        "terminated watchers: pods": 0.06,
    }
    assert list(traffic) == ["watch events: pods", "POST pods/binding", "terminated watchers: pods"]
    # One event in 200 pods is left out (under SMALLEST); nothing bound, nothing to say.
    assert apitraffic.per_pod(before, after, 0) == {}


def test_writes_leave_out_reads_and_watch_events() -> None:
    assert apitraffic.writes(apitraffic.counts(AFTER)) == 303.0


def test_terminated_counts_the_watchers_closed_between_the_readings() -> None:
    before, after = apitraffic.counts(BEFORE), apitraffic.counts(AFTER)
    assert apitraffic.terminated(before, after) == {"pods": 12}
    assert apitraffic.terminated(after, after) == {}
