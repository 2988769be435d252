"""What a benchmark measured: one ``RunResult`` per contender, inside a ``BenchResult``.

Times are seconds. A run's clock starts when its first create request is sent (stream
mode) or when its contender is started with the whole burst already created (backlog
mode); a pod's latency runs from the answer to its create request (or the clock's start,
whichever is later) to the moment the measuring watch sees it bound. ``pods_per_second``
is bound pods over clock start to last bind (what a user waiting for a burst sees);
``binding_pods_per_second`` is over first to last bind.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


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
    delete_seconds: float
    feasibility: dict[str, Any]
    settings: dict[str, Any]
    log: str
    # Seconds since the first create: each pod's create answer and bind, in order.
    create_times: list[float] = field(default_factory=list)
    bind_times: list[float] = field(default_factory=list)

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

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        for run, raw in zip(self.runs, document["runs"], strict=True):
            raw["pending"] = run.pending
            raw["timeline"] = run.timeline()
        return document


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
