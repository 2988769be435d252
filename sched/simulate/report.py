"""Showing a simulation: one JSON object for scripts, or rich tables for people."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from kubesalvo.sched.simulate.run import Summary

__all__ = ["render", "summary_json"]

_GIB = 1 << 30


def summary_json(summary: Summary) -> dict[str, Any]:
    """The summary as plain JSON types; quantities in kube-scheduler's units (cpu in
    millicores, memory and storage in bytes, others in counts)."""
    return {
        "source": summary.source,
        "strategy": summary.strategy,
        "nodes": summary.nodes,
        "schedulable_nodes": summary.schedulable_nodes,
        "bound_pods": summary.bound_pods,
        "pods": summary.pods,
        "gated_pods": summary.gated_pods,
        "workloads": summary.workloads,
        "omitted_workloads": summary.omitted_workloads,
        "placed": summary.placed,
        "unplaced": summary.unplaced,
        "rolled_back": summary.rolled_back,
        "classes": summary.classes,
        "seconds": summary.seconds,
        "kernel_seconds": summary.kernel_seconds,
        "encode_seconds": summary.encode_seconds,
        "cpu_seconds": summary.cpu_seconds,
        "placements_per_second": summary.placements_per_second,
        "kernel_placements_per_second": summary.kernel_placements_per_second,
        "microseconds_per_pod": summary.microseconds_per_pod,
        "kernel_microseconds_per_pod": summary.kernel_microseconds_per_pod,
        "generate_seconds": summary.generate_seconds,
        "load_seconds": summary.load_seconds,
        "state_rss_bytes": summary.state_rss_bytes,
        "peak_rss_bytes": summary.peak_rss_bytes,
        "load_average": summary.load_average,
        "nodes_used_before": summary.nodes_used_before,
        "nodes_used_after": summary.nodes_used_after,
        "nodes_receiving": summary.nodes_receiving,
        "utilisation": {
            use.name: {
                "allocatable": use.allocatable,
                "requested_before": use.requested_before,
                "requested_after": use.requested_after,
                "before": use.before,
                "after": use.after,
            }
            for use in summary.resources
        },
        "reasons": [
            {"reason": r.reason, "pods": r.pods, "nodes": r.nodes} for r in summary.reasons
        ],
        "messages": [{"message": text, "pods": pods} for text, pods in summary.messages],
    }


def _amount(resource: str, value: int) -> str:
    if resource == "cpu":
        return f"{value / 1000:,.1f} cores"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return f"{value / _GIB:,.1f} GiB"
    return f"{value:,}"


def _bytes(value: int) -> str:
    return f"{value / (1 << 20):,.0f} MiB"


def _overview(s: Summary) -> Table:
    table = Table(show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    rows = [
        ("nodes (schedulable)", f"{s.nodes:,} ({s.schedulable_nodes:,})"),
        ("pods already running", f"{s.bound_pods:,}"),
        ("burst (classes)", f"{s.pods:,} ({s.classes:,})"),
        ("placed", f"[green]{s.placed:,}[/green]"),
        ("not placed", f"[red]{s.unplaced:,}[/red]" if s.unplaced else "0"),
    ]
    if s.rolled_back:
        rows.append(("  of which gang members taken back", f"{s.rolled_back:,}"))
    if s.gated_pods:
        rows.append(("gated (left out)", f"{s.gated_pods:,}"))
    if s.workloads or s.omitted_workloads:
        # Services and controllers selecting the burst: default spreading's selectors.
        rows.append(("workloads (default spreading)", f"{s.workloads:,}"))
    rows += [
        ("score strategy", s.strategy),
        ("placements/s, end to end", f"{s.placements_per_second:,.0f}"),
        ("placements/s, kernel only", f"{s.kernel_placements_per_second:,.0f}"),
        ("per pod, end to end (kernel)", f"{s.microseconds_per_pod:,.1f} µs "
         f"({s.kernel_microseconds_per_pod:,.1f} µs)"),
        ("placement: wall (cpu)", f"{s.seconds:.3f} s ({s.cpu_seconds:.3f} s)"),
        ("  kernel / encode+assume", f"{s.kernel_seconds:.3f} s / {s.encode_seconds:.3f} s"),
        ("generate / load state", f"{s.generate_seconds:.3f} s / {s.load_seconds:.3f} s"),
        ("nodes used: before / after", f"{s.nodes_used_before:,} / {s.nodes_used_after:,}"),
        ("nodes the burst went to", f"{s.nodes_receiving:,}"),
        ("state memory (rss growth)", _bytes(s.state_rss_bytes)),
        ("peak rss", _bytes(s.peak_rss_bytes)),
        ("load average (1 min)", f"{s.load_average:.2f}"),
    ]  # fmt: skip
    for label, value in rows:
        table.add_row(label, value)
    return table


def _utilisation(s: Summary) -> Table:
    table = Table(title="utilisation (requested / allocatable)", title_justify="left")
    table.add_column("resource")
    table.add_column("allocatable", justify="right")
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    for use in s.resources:
        table.add_row(
            use.name,
            _amount(use.name, use.allocatable),
            f"{use.before:.1%}",
            f"{use.after:.1%}",
        )
    return table


def _reasons(s: Summary) -> Table:
    table = Table(title="why pods were not placed (FailedScheduling reasons)", title_justify="left")
    table.add_column("pods", justify="right")
    table.add_column("nodes (summed)", justify="right")
    table.add_column("reason")
    for r in s.reasons:
        table.add_row(f"{r.pods:,}", f"{r.nodes:,}" if r.nodes else "", r.reason)
    return table


def _messages(s: Summary) -> Table:
    table = Table(title="most frequent FailedScheduling messages", title_justify="left")
    table.add_column("pods", justify="right")
    table.add_column("message")
    for text, pods in s.messages:
        table.add_row(f"{pods:,}", text)
    return table


def render(summary: Summary, console: Console) -> None:
    console.print(f"[bold]kubesalvo simulate[/bold]: {summary.source}")
    console.print(_overview(summary))
    console.print(_utilisation(summary))
    if summary.unplaced:
        console.print(_reasons(summary))
        console.print(_messages(summary))
