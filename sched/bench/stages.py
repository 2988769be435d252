"""Where a run's latency went, read from the /metrics kubesalvo left when it stopped.

``kubesalvo bench`` saves kubesalvo's /metrics beside its log (contenders.metrics_file);
this reads the latency stage histograms of issue 33 from that text: for each stage of
``kubesalvo_stage_duration_seconds`` and for the whole (``kubesalvo_pod_event_to_bind_
seconds``), how many observations and their sum, and how many bursts were placed; and how
many times the scheduler opened its pods watch (``kubesalvo_informer_watches_total``): more
than once means the API server closed it as too slow, and the pods' events waited for the
reconnect (issue 33, second pass). The bench report shows the means and that count
(sched/bench/report.py).
"""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from kubesalvo.sched.metrics import STAGES

__all__ = ["BURSTS", "POD_WATCHES", "WHOLE", "read_stages", "stages_of"]

# The creation-event-to-bind-POST time, beside the stages.
WHOLE = "event_to_bind"
BURSTS = "bursts"
# The pods watch streams the scheduler opened, under "count".
POD_WATCHES = "pod_watches"


def stages_of(text: str) -> dict[str, dict[str, float]]:
    """{stage: {"count": n, "sum": seconds}} for each stage observed, the whole under
    ``WHOLE``, the bursts placed under ``BURSTS`` (count, and pods as sum), and the pods
    watches opened under ``POD_WATCHES`` (count)."""
    found: dict[str, dict[str, float]] = {}

    def add(name: str, part: str, value: float) -> None:
        found.setdefault(name, {"count": 0.0, "sum": 0.0})[part] += value

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if family.name == "kubesalvo_informer_watches":
                if sample.labels.get("resource") == "pods" and sample.name.endswith("_total"):
                    add(POD_WATCHES, "count", sample.value)
                continue
            part = sample.name.rpartition("_")[2]
            if part not in ("count", "sum"):
                continue
            if family.name == "kubesalvo_stage_duration_seconds":
                stage = sample.labels.get("stage", "")
                if stage in STAGES:
                    add(stage, part, sample.value)
            elif family.name == "kubesalvo_pod_event_to_bind_seconds":
                add(WHOLE, part, sample.value)
            elif family.name == "kubesalvo_burst_size":
                add(BURSTS, part, sample.value)
    return found


def read_stages(path: Path) -> dict[str, dict[str, float]]:
    """``stages_of`` the saved /metrics at ``path``; empty when there is none (contenders
    other than kubesalvo, or a scrape that failed)."""
    if not path.exists():
        return {}
    return stages_of(path.read_text(errors="replace"))
