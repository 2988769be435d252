"""Prometheus metrics under kube-scheduler's names and labels, plus kubesalvo's own.

Dashboards and alerts written for kube-scheduler work unchanged: the same metric names,
label names and label values (``result`` is ``scheduled``, ``unschedulable`` or
``error``; ``queue`` is ``active``, ``backoff``, ``unschedulable`` or ``gated``; ``event``
is the queue's label of what moved a pod) and the same histogram buckets. The metrics
live in their own ``CollectorRegistry`` so several schedulers (tests, benchmarks) can
exist in one process; the process's own figures
(``process_cpu_seconds_total``, ``process_resident_memory_bytes``, ...) and the API
client's traffic under client-go's names (``rest_client_requests_total``,
``rest_client_request_duration_seconds``), which the "Kubernetes / Scheduler" dashboard of
kubernetes-mixin charts, are registered on it too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"

QUEUE_ACTIVE = "active"
QUEUE_BACKOFF = "backoff"
QUEUE_UNSCHEDULABLE = "unschedulable"
QUEUE_GATED = "gated"

# The stages of kubesalvo_stage_duration_seconds, in the order a pod meets them.
STAGE_QUEUE_WAIT = "queue_wait"
STAGE_GATHERING = "gathering"
STAGE_ENCODE = "encode"
STAGE_KERNEL = "kernel"
STAGE_ASSUME = "assume"
STAGE_PLACING = "placing"
STAGE_BIND_WAIT = "bind_wait"
STAGE_BIND = "bind"
STAGES = (
    STAGE_QUEUE_WAIT,
    STAGE_GATHERING,
    STAGE_ENCODE,
    STAGE_KERNEL,
    STAGE_ASSUME,
    STAGE_PLACING,
    STAGE_BIND_WAIT,
    STAGE_BIND,
)

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Prometheus' ExponentialBuckets, as kube-scheduler declares its histograms: each
    bound the one before times ``factor``, so that a factor like 1.5 renders the same
    rounded bounds as Go's (``start * factor**i`` differs in the last digits)."""
    buckets = []
    bound = start
    for _ in range(count):
        buckets.append(bound)
        bound *= factor
    return buckets


class SchedulerMetrics:
    """Every metric the scheduler exports, registered on ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self._children: dict[tuple[Any, tuple[str, ...]], Any] = {}
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=r,
        )
        self.scheduling_attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=exponential_buckets(0.001, 2, 15),
            registry=r,
        )
        self.scheduling_algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            buckets=exponential_buckets(0.001, 2, 15),
            registry=r,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
            "number of pods in unschedulablePods; 'gated' means number of gated pods.",
            ["queue"],
            registry=r,
        )
        self.pod_scheduling_sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the "
            "scheduling queue and might involve multiple scheduling attempts.",
            ["attempts"],
            buckets=exponential_buckets(0.01, 2, 20),
            registry=r,
        )
        self.pod_scheduling_attempts = Histogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=exponential_buckets(1, 2, 5),
            registry=r,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            registry=r,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=exponential_buckets(1, 2, 7),
            registry=r,
        )
        self.queue_incoming = Counter(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=r,
        )
        # Upstream times a sample of its cycles (10%), each plugin call apart; kubesalvo
        # times the plugins it runs as separate calls (DefaultBinder's POST, each PreBind),
        # every one: the Filter and Score plugins run fused in the burst kernel, whose time
        # is kubesalvo_kernel_seconds (docs/operator.md).
        self.plugin_execution_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=exponential_buckets(0.00001, 1.5, 20),
            registry=r,
        )
        self.burst_size = Histogram(
            "kubesalvo_burst_size",
            "Number of pods placed by one call of the burst kernel.",
            buckets=exponential_buckets(1, 2, 16),
            registry=r,
        )
        self.kernel_seconds = Histogram(
            "kubesalvo_kernel_seconds",
            "Time spent in one call of the burst placement kernel, in seconds.",
            buckets=exponential_buckets(0.0001, 2, 18),
            registry=r,
        )
        # Where a pod's time goes from its creation event to its bind POST (issue 33).
        # Upstream's histogram for the bind POST; kubesalvo's own for its stages.
        self.extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=exponential_buckets(0.0001, 2, 12),
            registry=r,
        )
        self.stage_duration = Histogram(
            "kubesalvo_stage_duration_seconds",
            "Time spent in one stage between a pod's creation event and its bind POST: "
            "per pod queue_wait (added to the active queue until popped), bind_wait "
            "(handed to the binder until its POST is sent: a free bind slot, the client's "
            "limiter, the event loop's turn) and bind (POST sent until answered); per "
            "burst gathering (work found until the burst is popped), encode, kernel, "
            "assume and placing (popped until every bind of the burst is handed over).",
            ["stage"],
            buckets=exponential_buckets(0.0001, 2, 18),
            registry=r,
        )
        self.event_to_bind = Histogram(
            "kubesalvo_pod_event_to_bind_seconds",
            "Time from the event that made a pod ready to schedule (its creation, for a "
            "new pod) to the sending of the bind POST that bound it, in seconds.",
            buckets=exponential_buckets(0.001, 2, 16),
            registry=r,
        )
        self.binds = Counter(
            "kubesalvo_binds",
            "Bind calls by how they settled: bound, forgotten (pod gone, recreated or "
            "bound elsewhere) or failed (un-assumed and requeued).",
            ["result"],
            registry=r,
        )
        self.binds_in_flight = Gauge(
            "kubesalvo_binds_in_flight",
            "Bind calls sent to the API server and not yet answered.",
            registry=r,
        )
        # client-go's names, labels and buckets: dashboards of API traffic work unchanged.
        self.rest_client_requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "host", "method"],
            registry=r,
        )
        self.rest_client_request_duration = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=[0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0],
            registry=r,
        )
        self.gc_pauses = Histogram(
            "kubesalvo_gc_pause_seconds",
            "Passes of Python's cyclic garbage collector by generation (2 = full), in "
            "seconds: the scheduler's event loop stands still meanwhile.",
            ["generation"],
            buckets=exponential_buckets(0.0001, 2, 14),
            registry=r,
        )
        self.deprecated_fields = Gauge(
            "kubesalvo_config_deprecated_fields",
            "Deprecated fields the configuration file uses (1 each, by path): still read, "
            "to be moved (the start-up log says where).",
            ["field"],
            registry=r,
        )
        self.events_dropped = Counter(
            "kubesalvo_events_dropped",
            "Events and condition updates dropped because too many were waiting.",
            registry=r,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=r,
        )
        ProcessCollector(registry=r)
        for queue in (QUEUE_ACTIVE, QUEUE_BACKOFF, QUEUE_UNSCHEDULABLE, QUEUE_GATED):
            self.pending_pods.labels(queue=queue).set(0)

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None:
        self._child(self.schedule_attempts, result, profile).inc()
        self._child(self.scheduling_attempt_duration, result, profile).observe(seconds)

    def observe_incoming(self, queue: str, event: str) -> None:
        """A pod entered ``queue`` (active, backoff, unschedulable) on ``event``."""
        self._child(self.queue_incoming, queue, event).inc()

    def observe_plugin(
        self, plugin: str, extension_point: str, status: str, seconds: float
    ) -> None:
        """One call of ``plugin`` at ``extension_point`` ended with ``status`` (upstream's
        status codes: Success, Unschedulable, UnschedulableAndUnresolvable, Error, ...)."""
        self._child(self.plugin_execution_duration, plugin, extension_point, status).observe(
            seconds
        )

    def observe_scheduled_pod(self, attempts: int, sli_seconds: float) -> None:
        """A pod got bound after ``attempts`` tries, ``sli_seconds`` after it was queued."""
        self._child(self.pod_scheduling_sli_duration, str(attempts)).observe(sli_seconds)
        self.pod_scheduling_attempts.observe(attempts)

    def observe_burst(self, pods: int, kernel_seconds: float) -> None:
        """One kernel call placed ``pods`` pods; it is also the algorithm's latency of the
        burst (every pod of a burst shares one algorithm run)."""
        self.burst_size.observe(pods)
        self.kernel_seconds.observe(kernel_seconds)
        self.scheduling_algorithm_duration.observe(kernel_seconds)

    def observe_stage(self, stage: str, seconds: float) -> None:
        self._child(self.stage_duration, stage).observe(seconds)

    def observe_queue_waits(self, waits: Iterable[float]) -> None:
        """Each popped pod's time in the active queue."""
        child = self._child(self.stage_duration, STAGE_QUEUE_WAIT)
        for seconds in waits:
            child.observe(seconds)

    def observe_bind_post(self, profile: str, in_flight: float, since_event: float) -> None:
        """A bind POST answered with success after ``in_flight`` seconds, sent
        ``since_event`` seconds after the pod became ready (kube-scheduler's Bind
        extension point is its DefaultBinder's POST)."""
        self._child(self.extension_point_duration, "Bind", "Success", profile).observe(in_flight)
        self.observe_plugin("DefaultBinder", "Bind", "Success", in_flight)
        self._child(self.stage_duration, STAGE_BIND).observe(in_flight)
        self.event_to_bind.observe(since_event)

    def observe_preemption(self, victims: int | None) -> None:
        """DefaultPreemption ran for a pod that fit nowhere (every run counts, eligible or
        not, as upstream's PostFilter counts); ``victims``: how many pods the chosen node
        evicts, None when no node was chosen."""
        self.preemption_attempts.inc()
        if victims is not None:
            self.preemption_victims.observe(victims)

    def count_bind(self, result: str) -> None:
        """A bind settled with ``result`` (bound, forgotten, failed)."""
        self._child(self.binds, result).inc()

    def observe_request(self, host: str, method: str, code: str, seconds: float) -> None:
        """One request to the API server answered (``code``: the status, or "<error>")."""
        self._child(self.rest_client_requests, code, host, method).inc()
        self._child(self.rest_client_request_duration, method, host).observe(seconds)

    def _child(self, metric: Any, *values: str) -> Any:
        """``metric.labels(*values)`` (values in the order of its label names), kept:
        prometheus_client checks the values and takes a lock at every ``labels`` call,
        a few microseconds each on the several series every bound pod touches. A child
        lives as long as its metric here (none is ever removed)."""
        key = (metric, values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def render(self) -> bytes:
        return generate_latest(self.registry)


class InformerCollector(Collector):
    """The informers' LIST and WATCH requests by resource, read at each scrape: a watch
    the API server closes early (its watch cache drops a watcher that does not keep up)
    shows as more watches than ``timeoutSeconds`` explains; a 410 Gone as another list."""

    def __init__(self, informers: Callable[[], Iterable[tuple[str, int, int]]]) -> None:
        self.informers = informers  # (resource, lists, watches) of each informer

    def collect(self) -> Iterator[CounterMetricFamily]:
        lists = CounterMetricFamily(
            "kubesalvo_informer_lists", "LIST requests of an informer.", labels=["resource"]
        )
        watches = CounterMetricFamily(
            "kubesalvo_informer_watches",
            "WATCH requests (streams opened) of an informer.",
            labels=["resource"],
        )
        for resource, listed, watched in self.informers():
            lists.add_metric([resource], listed)
            watches.add_metric([resource], watched)
        yield lists
        yield watches


class UnschedulablePodsCollector(Collector):
    """``scheduler_unschedulable_pods{plugin, profile}``, read from the queue at each scrape.

    As kube-scheduler counts it: each queued pod (not one being scheduled now) counts once
    for every plugin that rejected it in its last attempt or that gates it (PreEnqueue),
    under its scheduler name. Upstream keeps the gauge by increments and decrements; the
    same figure is counted here from the queue itself, so it cannot drift. One difference
    follows: kube-scheduler (v1.34) decrements only when it pops a pod, so a pod deleted
    while it waits stays in its gauge; here it leaves the count.
    """

    def __init__(self, queued: Callable[[], Iterable[tuple[str, Iterable[str]]]]) -> None:
        self.queued = queued  # (scheduler name, plugins) of each queued pod

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "scheduler_unschedulable_pods",
            "Pods waiting in the queue by a plugin that rejected or gates them, and profile; "
            "a pod counts once under each such plugin.",
            labels=["plugin", "profile"],
        )
        counts: dict[tuple[str, str], int] = {}
        for profile, plugins in self.queued():
            for plugin in plugins:
                counts[(plugin, profile)] = counts.get((plugin, profile), 0) + 1
        for (plugin, profile), count in sorted(counts.items()):
            family.add_metric([plugin, profile], count)
        yield family
