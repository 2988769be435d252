"""CPU seconds and memory of the processes a benchmark involves, sampled with psutil.

A background thread samples each process a few times a second:
cumulative user+system CPU seconds and resident memory. CPU used over any interval is read
off the samples by linear interpolation, so a run's figure covers exactly the interval
from its first pod creation to its last bind, whenever the harness notices the end. The
whole machine's busy CPU time is sampled too (series ``MACHINE``): on a shared machine
what the listed processes did not use is other load, and part of the picture.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import psutil

PERIOD = 0.2
MACHINE = "machine"


@dataclass(frozen=True)
class Sample:
    at: float  # time.monotonic()
    cpu_seconds: float  # user + system, cumulative
    rss_bytes: int


@dataclass
class Series:
    samples: list[Sample] = field(default_factory=list)

    def cpu_at(self, at: float) -> float:
        """Cumulative CPU seconds at ``at``, interpolated between the nearest samples."""
        times = [s.at for s in self.samples]
        i = bisect.bisect_left(times, at)
        if i == 0:
            return self.samples[0].cpu_seconds
        if i == len(self.samples):
            return self.samples[-1].cpu_seconds
        before, after = self.samples[i - 1], self.samples[i]
        share = (at - before.at) / (after.at - before.at) if after.at > before.at else 1.0
        return before.cpu_seconds + share * (after.cpu_seconds - before.cpu_seconds)

    def peak_rss(self, start: float, end: float) -> int:
        inside = [s.rss_bytes for s in self.samples if start - PERIOD <= s.at <= end + PERIOD]
        return max(inside, default=0)


@dataclass(frozen=True)
class Usage:
    cpu_seconds: float
    peak_rss_bytes: int


def _measure(process: psutil.Process) -> tuple[float, int] | None:
    # The process alone: every process measured here does its work in one process, and
    # listing descendants means scanning all of /proc at every sample.
    try:
        with process.oneshot():
            times = process.cpu_times()
            return times.user + times.system, process.memory_info().rss
    except psutil.Error:
        return None  # gone: its last sample stands


class Sampler:
    """Samples ``pids`` (name -> pid) every ``period`` seconds until ``stop``."""

    def __init__(self, pids: Mapping[str, int], period: float = PERIOD) -> None:
        self.period = period
        self.series: dict[str, Series] = {name: Series() for name in [*pids, MACHINE]}
        self._processes = {name: psutil.Process(pid) for name, pid in pids.items()}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="bench-usage", daemon=True)

    def add(self, name: str, pid: int, started: float) -> None:
        """Samples ``pid`` from now on; it started at ``started`` (time.monotonic()), when
        its CPU time was zero."""
        with self._lock:
            self.series[name] = Series([Sample(started, 0.0, 0)])
            self._processes[name] = psutil.Process(pid)
        self.sample()

    def start(self) -> Sampler:
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def sample(self) -> None:
        with self._lock:
            now = time.monotonic()
            for name, process in self._processes.items():
                measured = _measure(process)
                if measured is not None:
                    self.series[name].samples.append(Sample(now, *measured))
            times = psutil.cpu_times()
            # guest time is already inside user; steal is the hypervisor's, not ours.
            busy = times.user + times.nice + times.system + times.irq + times.softirq
            used = psutil.virtual_memory().used
            self.series[MACHINE].samples.append(Sample(now, busy, used))

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            self.sample()

    def usage(self, name: str, start: float, end: float) -> Usage:
        series = self.series[name]
        cpu = series.cpu_at(end) - series.cpu_at(start)
        return Usage(round(cpu, 3), series.peak_rss(start, end))


def machine() -> dict[str, object]:
    """What the numbers were measured on."""
    return {
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "memory_bytes": psutil.virtual_memory().total,
    }
