"""BurstPacking (kubesalvo): a burst packed onto fewer nodes, and fuller when room is short.

kube-scheduler places one pod at a time; kubesalvo's kernel places a burst in queue
order the same way. With BurstPacking enabled, the kernel's assignment of each burst is
then improved before any pod is bound (``core/burst_packing.py``, ``core/packing.py``):
most pods placed, then fewest nodes newly used - the nodes cluster-autoscaler can then
scale down. Small bursts are solved exactly (scipy's HiGHS ``milp``, under
``timeBudgetSeconds``; the kernel's result when the budget runs out), every burst gets
the bounded moves (a first-fit-decreasing repack, the least filled nodes emptied).

What it keeps: every filter holds (the production filters' verdict per class, the
resource fit, and the kernel itself checks each moved pod's node again, as a nominated
node), no pod the kernel placed is left out, a lower priority never takes room a higher
one needed, and pods whose placement depends on other pods (topology spread, inter-pod
affinity, host ports, gangs, volumes, resource claims) stay where the kernel put them.
A node that held pods before the burst is never counted as freed.

It implements the reserve point (it revises the burst's placements before they are
reserved), and takes args::

    profiles:
    - schedulerName: packed
      plugins:
        reserve:
          enabled: [{name: BurstPacking}]
      pluginConfig:
      - name: BurstPacking
        args: {maxExactPods: 500, maxExactNodes: 100, timeBudgetSeconds: 1, maxEmptiedNodes: 256}
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import RESERVE, ErrorKind, FieldError, PluginSpec, check

__all__ = ["NAME", "BurstPackingArgs"]

NAME = names.BURST_PACKING
# Beyond this an exact solve is not a per-burst step any more: say so at start.
MAX_TIME_BUDGET_SECONDS = 60.0


@dataclass(frozen=True)
class BurstPackingArgs:
    """BurstPackingArgs: the exact solve's size limits (movable pods, nodes) and time
    budget, and how many of the least filled nodes the bounded moves try to empty."""

    max_exact_pods: int = 500
    max_exact_nodes: int = 100
    time_budget_seconds: float = 1.0
    max_emptied_nodes: int = 256

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        found = [
            FieldError(key, ErrorKind.INVALID, value, "must not be negative")
            for key, value in (
                ("maxExactPods", self.max_exact_pods),
                ("maxExactNodes", self.max_exact_nodes),
                ("maxEmptiedNodes", self.max_emptied_nodes),
            )
            if value < 0
        ]
        if not 0 < self.time_budget_seconds <= MAX_TIME_BUDGET_SECONDS:
            found.append(
                FieldError(
                    "timeBudgetSeconds",
                    ErrorKind.INVALID,
                    self.time_budget_seconds,
                    f"must be greater than 0 and at most {MAX_TIME_BUDGET_SECONDS:g}",
                )
            )
        if self.max_exact_pods and importlib.util.find_spec("scipy") is None:
            # The exact solve is scipy's milp: refuse at start rather than skip it quietly.
            found.append(
                FieldError(
                    "maxExactPods",
                    ErrorKind.INVALID,
                    self.max_exact_pods,
                    "the exact solve needs scipy (scipy.optimize.milp), which is not "
                    "installed: install scipy, or set maxExactPods to 0 for the moves alone",
                )
            )
        return found


SPEC = PluginSpec(NAME, frozenset({RESERVE}), args=BurstPackingArgs)
