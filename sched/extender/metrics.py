"""The extender's Prometheus metrics: requests and their latency per verb and agent.

``agent`` is the URL prefix's agent, or ``all`` for the combined ``/filter``,
``/prioritize``, ``/preempt`` and ``/bind``; ``code`` is the HTTP status, or
``error`` when the answer carried an ``Error``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from kubesalvo.sched.metrics import CONTENT_TYPE, exponential_buckets

__all__ = ["ALL_AGENTS", "CONTENT_TYPE", "ExtenderMetrics"]

ALL_AGENTS = "all"


class ExtenderMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.requests = Counter(
            "kubesalvo_extender_requests",
            "Extender requests, by verb, agent (or 'all') and code ('error' for an answer "
            "carrying an Error).",
            ["verb", "agent", "code"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "kubesalvo_extender_request_duration_seconds",
            "Extender request latency in seconds, from the body read to the answer.",
            ["verb", "agent"],
            buckets=exponential_buckets(0.00025, 2, 16),
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
