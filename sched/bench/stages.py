"""Where a run's latency went, read from the /metrics kubesalvo left when it stopped.

``kubesalvo bench`` saves kubesalvo's /metrics beside its log (contenders.metrics_file);
this reads the latency stage histograms of issue 33 from that text: for each stage of
``kubesalvo_stage_duration_seconds`` and for the whole (``kubesalvo_pod_event_to_bind_
seconds``), how many observations and their sum, and how many bursts were placed. The
bench report shows the means (sched/bench/report.py).
"""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from kubesalvo.sched.metrics import STAGES

__all__ = ["BURSTS", "WHOLE", "read_stages", "stages_of"]

# The creation-event-to-bind-POST time, beside the stages.
WHOLE = "event_to_bind"
BURSTS = "bursts"


def stages_of(text: str) -> dict[str, dict[str, float]]:
    """{stage: {"count": n, "sum": seconds}} for each stage observed, the whole under
    ``WHOLE``, and the bursts placed under ``BURSTS`` (count, and pods as sum)."""
    found: dict[str, dict[str, float]] = {}

    def add(name: str, part: str, value: float) -> None:
        found.setdefault(name, {"count": 0.0, "sum": 0.0})[part] += value

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
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
