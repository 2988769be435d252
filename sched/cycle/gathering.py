"""The gathering window: how long the burst cycle waits for company once a pod is ready.

A fixed wait after the first ready pod costs a lone pod the whole window, for nothing; no
wait at all splits a surge into bursts of a few pods, each paying a burst's fixed cost.
The rule in between, decided from the arrivals the queue reports (its ``on_active``):

- a pod that arrived alone (the arrival before it is at least ``quiet`` seconds older) is
  placed at once: nothing suggests company is coming;
- while pods keep arriving less than ``quiet`` seconds apart, the cycle keeps waiting, up
  to ``quiet`` after the latest arrival;
- never longer than ``window`` (``burstGatheringWindow``) after the cycle found work, and
  not at all once a full burst (``maxBurstPods``) is ready;
- but while binds wait for a free slot of the binder (every slot taken), placing sooner
  buys nothing: a pod placed now would only queue behind them. The cycle then keeps
  collecting, whatever the arrivals, for as long as binds wait and at most ``HOLD`` seconds
  (or ``window``, if longer) after it found work, and asks again every ``window``: fewer,
  larger bursts pay the fixed cost of a burst less often per pod, CPU the API server is
  waiting for when the binder backs up. It places as soon as no bind waits, while every
  slot is still busy, so the binder does not run dry.

``quiet`` is the window itself (``QUIET_SHARE``): pods arriving faster than one per window
(100/s at the default 10 ms) gather as they did under a fixed window, slower ones go one by
one without waiting. A shorter quiet gap was tried (a fifth, a half of the window): a surge
of pod creations reaches the scheduler in chunks of watch events a few milliseconds apart,
so it ended gatherings early and doubled the bursts of 500 pods created at once (figures
in bench/RESULTS.md, issue 33). Pure logic on the times it is given, so that tests decide
with a fake clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["HOLD", "QUIET_SHARE", "Gathering"]

# The quiet gap that ends a gathering, as a share of the window.
QUIET_SHARE = 1.0
# The longest a gathering lasts while binds wait for the binder's slots, seconds. A bound,
# so that a binder stuck behind a throttling API server never holds pods back for long.
HOLD = 1.0


@dataclass
class Gathering:
    window: float  # the upper bound of one gathering, seconds
    quiet: float  # arrivals further apart than this end a gathering
    last: float = -math.inf  # the latest arrival
    previous: float = -math.inf  # the arrival before it

    @classmethod
    def for_window(cls, window: float) -> Gathering:
        return cls(window, window * QUIET_SHARE)

    def arrived(self, now: float) -> None:
        """Pods became ready at ``now`` (one call may stand for many pods)."""
        self.previous, self.last = self.last, now

    def wait(
        self, now: float, started: float, ready: int, max_pods: int, binds_waiting: int = 0
    ) -> float:
        """Seconds to wait before asking again; 0: take the burst now. ``started``: when
        the cycle found work; ``ready``: pods ready now; ``binds_waiting``: binds waiting
        for a free slot of the binder."""
        if self.window <= 0 or ready >= max_pods:
            return 0.0
        if binds_waiting > 0:
            held = started + max(self.window, HOLD) - now
            return min(self.window, held) if held > 0 else 0.0
        left = started + self.window - now
        if left <= 0:
            return 0.0
        if self.last - self.previous >= self.quiet:
            return 0.0  # a lone arrival: place it without waiting for company
        until_quiet = self.last + self.quiet - now
        if until_quiet <= 0:
            return 0.0  # the arrivals stopped
        return min(until_quiet, left)
