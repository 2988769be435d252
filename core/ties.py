"""The random stream the burst kernel draws ties from, seeded and kept here.

kube-scheduler's selectHost picks uniformly at random among the nodes that share the best
total score. The kernel (core/_place.pyx) draws those picks from a splitmix64 stream whose
state is one uint64 held by a ``TieBreak``: ``place_burst`` hands it to each burst's
kernel, which reads it when it starts and writes it back when it ends, so that a runtime
keeping one ``TieBreak`` across bursts draws one stream, and the same seed with the same
bursts gives the same placements.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["DEFAULT_SEED", "TieBreak"]

# The seed of place_burst's stream when none is given (each call starts it afresh).
DEFAULT_SEED = 0

_MASK = (1 << 64) - 1


class TieBreak:
    """The state of the tie stream: one uint64, which the kernel advances in place."""

    __slots__ = ("seed", "state")

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        if seed < 0:
            raise ValueError(f"tie-break seed must be 0 or more, not {seed}")
        self.seed = seed
        self.state: npt.NDArray[np.uint64] = np.array([seed & _MASK], dtype=np.uint64)
