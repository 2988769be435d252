"""Clocks for the queue: the real monotonic one and a fake one that tests move by hand.

Backoff expiries and the unschedulable timeout are compared against ``clock.now()``
(seconds, monotonic, no fixed epoch); nothing in the queue sleeps or reads the wall
clock, so a test controls every timing with :class:`FakeClock`.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "FakeClock", "MonotonicClock"]


class Clock(Protocol):
    def now(self) -> float: ...


class MonotonicClock:
    """``time.monotonic()``: never goes backwards, unaffected by wall-clock changes."""

    def now(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that stands still until told to move; it refuses to go backwards."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def step(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go backwards")
        self._now += seconds
