"""Per-row sums of events that fade with a half-life, read for all rows at once.

An event at time ``t`` weighs ``2 ** (-(now - t) / half_life)`` at ``now``. Each row keeps
``sum(2 ** ((t - origin) / half_life))`` over its events, so adding or taking back one
event is one addition and reading every row is one multiplication by
``2 ** (-(now - origin) / half_life)``. The origin moves forward (and the sums are
rescaled) before the exponents grow large enough to lose precision.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kubesalvo.sched.extender.agent import RowArray

# Rescale once the newest weight passes 2**40: float64 keeps 52 bits, so sums of weights
# this far apart still add exactly enough for counting pods.
_REBASE_EXPONENT = 40.0


class DecayingSums:
    """A decaying event sum per row."""

    def __init__(self, half_life: float, origin: float = 0.0) -> None:
        if half_life <= 0:
            raise ValueError("half_life must be positive")
        self.half_life = half_life
        self.origin = origin
        self.sums = RowArray(np.float64)

    def weight(self, at: float) -> float:
        """The stored weight of an event at time ``at`` (what ``add`` added)."""
        exponent = (at - self.origin) / self.half_life
        if exponent > _REBASE_EXPONENT:
            self._rebase(at)
            exponent = 0.0
        return float(2.0**exponent)

    def _rebase(self, origin: float) -> None:
        factor = 2.0 ** (-(origin - self.origin) / self.half_life)
        self.sums.data *= factor
        self.origin = origin

    def add(self, row: int, at: float, sign: int = 1) -> float:
        """Add (or with ``sign=-1`` take back) an event of ``row`` at ``at``; taking back
        needs only the event's time, whatever rebasing happened since."""
        w = self.weight(at)
        data = self.sums.ensure(row + 1)
        data[row] = max(0.0, data[row] + sign * w)
        return w

    def reset(self, row: int) -> None:
        self.sums.reset(row)

    def values(self, rows: int, now: float) -> npt.NDArray[np.float64]:
        """Every row's decayed sum at ``now``."""
        factor = 2.0 ** (-(now - self.origin) / self.half_life)
        return self.sums.view(rows) * factor
