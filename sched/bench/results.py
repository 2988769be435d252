"""What a benchmark measured: one ``RunResult`` per contender, inside a ``BenchResult``.

Times are seconds. A run's clock starts when its first create request is sent (stream
mode) or when its contender is started with the whole burst already created (backlog
mode); a pod's latency runs from the answer to its create request (or the clock's start,
whichever is later) to the moment the measuring watch sees it bound. ``pods_per_second``
is bound pods over clock start to last bind (what a user waiting for a burst sees);
``binding_pods_per_second`` is over first to last bind.

``to_json`` adds to each run a ``summary`` of the figures users compare (see
bench/README.md): throughput, latency quantiles, CPU seconds per 1,000 pods of the
scheduler, kube-apiserver and etcd, the scheduler's peak memory, pods placed and placed
infeasibly, and its ratios to kube-scheduler and to raw-bind in the same conditions.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from kubesalvo.sched.bench import repeat


@dataclass
class ProcessUsage:
    cpu_seconds: float
    peak_rss_bytes: int


@dataclass
class RunResult:
    scheduler: str
    mode: str  # "stream" or "backlog" (see harness)
    outcome: str  # "all bound", "stalled" (no bind for the settle time) or "timeout"
    pods: int
    bound: int
    created_seconds: float
    duration_seconds: float
    pods_per_second: float
    binding_pods_per_second: float
    time_to_first_bind: float
    latency: dict[str, float]
    usage: dict[str, ProcessUsage]
    startup_seconds: float
    # None: the pods were left to a control plane stopped right after the run.
    delete_seconds: float | None
    feasibility: dict[str, Any]
    settings: dict[str, Any]
    log: str
    # Seconds since the first create: each pod's create answer and bind, in order.
    create_times: list[float] = field(default_factory=list)
    bind_times: list[float] = field(default_factory=list)
    # Open-loop runs (mode "rate"): the offered rate (and its share of the raw-bind
    # ceiling in a sweep), the creator's schedule and lag, how far binding kept up.
    # Each bound pod's latency (created → bound), in order, for the CDF.
    latencies: list[float] = field(default_factory=list)
    offered_rate: float | None = None
    # How the burst was created: bare pods, or Deployments, Jobs and bare pods.
    created_through: dict[str, int] = field(default_factory=dict)
    share_of_ceiling: float | None = None
    creator: dict[str, Any] = field(default_factory=dict)
    keep_up: dict[str, Any] = field(default_factory=dict)
    # The hpa scenario: a sample every two seconds of the load, the autoscaler's desired
    # replicas, the Deployment's replicas and its pods pending and bound (see bench.hpa).
    autoscaling: list[dict[str, Any]] = field(default_factory=list)
    # (seconds since the clock started when bound, that pod's latency), in bind order.
    bind_latencies: list[tuple[float, float]] = field(default_factory=list)
    # What the API server served over the window, per bound pod: requests by "VERB
    # resource" and watch events sent by resource (bench.apitraffic).
    api_traffic: dict[str, float] = field(default_factory=dict)
    # kubesalvo's latency stages from its saved /metrics (bench.stages): stage -> count, sum.
    stages: dict[str, dict[str, float]] = field(default_factory=dict)
    # Which round of ``--repeat`` this run belongs to (from 1; the ceiling's is 0).
    round_number: int = 1
    # Churn (a pod lifetime): the run's pods the bench deleted once they had lived it, all
    # and those by the last bind (the figures' window; a stalled run waits on after it).
    lifetime_deletions: int | None = None
    lifetime_deletions_in_window: int | None = None

    @property
    def pending(self) -> int:
        return self.pods - self.bound

    def timeline(self, step: float = 1.0) -> list[tuple[float, int]]:
        """(second, pods bound by then) every ``step`` seconds up to the last bind."""
        if not self.bind_times:
            return []
        edges = np.arange(0.0, self.bind_times[-1] + step, step)
        counts = np.searchsorted(np.asarray(self.bind_times), edges, side="right")
        return [(round(float(t), 3), int(c)) for t, c in zip(edges, counts, strict=True)]


@dataclass
class BenchResult:
    command: str
    started: str  # RFC 3339, UTC
    scenario: dict[str, Any]
    control_plane: dict[str, Any]
    machine: dict[str, Any]
    runs: list[RunResult] = field(default_factory=list)
    # A sweep (``--rates``): raw-bind's backlog run that measured the ceiling.
    ceiling: RunResult | None = None
    # The contenders in the order named (the first is the medians' reference), and how many
    # rounds ran each of them (``--repeat``).
    schedulers: list[str] = field(default_factory=list)
    rounds: int = 1

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["medians"] = repeat.medians(self.runs, self.schedulers)
        for run, raw in zip(self.runs, document["runs"], strict=True):
            raw["pending"] = run.pending
            raw["timeline"] = run.timeline()
            raw["summary"] = summary(
                run,
                self.reference(run, "kube-scheduler"),
                self.raw(run),
                self.reference(run, "raw-bind-events"),
            )
        return document

    def reference(self, run: RunResult, scheduler: str) -> RunResult | None:
        """The run of ``scheduler`` in the same conditions as ``run`` (same offered rate,
        same round)."""
        for other in self.runs:
            same = other.offered_rate == run.offered_rate and other.round_number == run.round_number
            if other.scheduler == scheduler and same:
                return other
        return None

    def raw(self, run: RunResult) -> RunResult | None:
        """raw-bind in the same conditions, else the ceiling run of a sweep."""
        return self.reference(run, "raw-bind") or self.ceiling


# Processes whose CPU per 1,000 pods the summary gives.
SUMMARY_PROCESSES = ("scheduler", "extender", "kube-apiserver", "etcd")


def summary(
    run: RunResult,
    kube_scheduler: RunResult | None,
    raw_bind: RunResult | None,
    raw_bind_events: RunResult | None = None,
) -> dict[str, Any]:
    """The comparable figures of one run. Ratios are this run's figure over the other's:
    above 1 means more pods/s, a longer p99 latency, or more CPU per pod (the scheduler's
    own, and the API server's)."""
    per_thousand = 1000 / run.bound if run.bound else 0.0
    checked = run.feasibility.get("checked", False)
    figures: dict[str, Any] = {
        "pods_per_second": run.pods_per_second,
        "p50_seconds": run.latency.get("p50"),
        "p90_seconds": run.latency.get("p90"),
        "p99_seconds": run.latency.get("p99"),
        "max_seconds": run.latency.get("max"),
        "cpu_seconds_per_1000_pods": {
            process: round(run.usage[process].cpu_seconds * per_thousand, 3)
            for process in SUMMARY_PROCESSES
            if process in run.usage
        },
        "peak_rss_bytes": run.usage["scheduler"].peak_rss_bytes if "scheduler" in run.usage else 0,
        "placed": run.bound,
        "infeasible": run.feasibility.get("violation_count", 0) if checked else None,
        "offered_pods_per_second": run.offered_rate,
    }
    others = (
        ("kube_scheduler", kube_scheduler),
        ("raw_bind", raw_bind),
        ("raw_bind_events", raw_bind_events),
    )
    for name, other in others:
        figures[f"ratio_to_{name}"] = _ratios(run, other) if other is not None else None
    return figures


def _cpu_per_pod(run: RunResult, process: str) -> float | None:
    usage = run.usage.get(process)
    return usage.cpu_seconds / run.bound if usage is not None and run.bound else None


def _ratios(run: RunResult, other: RunResult) -> dict[str, float | None]:
    def ratio(mine: float | None, theirs: float | None) -> float | None:
        return round(mine / theirs, 3) if mine is not None and theirs else None

    return {
        "pods_per_second": ratio(run.pods_per_second, other.pods_per_second),
        "p99_seconds": ratio(run.latency.get("p99"), other.latency.get("p99")),
        "scheduler_cpu_per_pod": ratio(
            _cpu_per_pod(run, "scheduler"), _cpu_per_pod(other, "scheduler")
        ),
        "apiserver_cpu_per_pod": ratio(
            _cpu_per_pod(run, "kube-apiserver"), _cpu_per_pod(other, "kube-apiserver")
        ),
    }


def latency_summary(latencies: list[float]) -> dict[str, float]:
    if not latencies:
        return {}
    values = np.asarray(latencies)
    return {
        "p50": round(float(np.percentile(values, 50)), 4),
        "p90": round(float(np.percentile(values, 90)), 4),
        "p99": round(float(np.percentile(values, 99)), 4),
        "max": round(float(values.max()), 4),
        "mean": round(float(values.mean()), 4),
    }
