"""CPU over an interval read off sampled cumulative CPU times; sampling real processes."""

from __future__ import annotations

import os

import pytest

from kubesalvo.sched.bench.usage import MACHINE, Sample, Sampler, Series


def test_cpu_between_samples_is_interpolated() -> None:
    series = Series([Sample(10.0, 1.0, 100), Sample(11.0, 3.0, 300), Sample(12.0, 3.5, 200)])
    assert series.cpu_at(10.5) == pytest.approx(2.0)
    assert series.cpu_at(11.0) == pytest.approx(3.0)
    assert series.cpu_at(9.0) == 1.0 and series.cpu_at(13.0) == 3.5
    assert series.peak_rss(10.5, 11.5) == 300


def test_sampler_measures_this_process_and_the_machine() -> None:
    sampler = Sampler({"me": os.getpid()}, period=0.01).start()
    sum(i * i for i in range(300_000))  # some CPU of our own to see
    sampler.stop()
    first, last = sampler.series["me"].samples[0], sampler.series["me"].samples[-1]
    usage = sampler.usage("me", first.at, last.at)
    assert usage.cpu_seconds > 0 and usage.peak_rss_bytes > 0
    assert sampler.usage(MACHINE, first.at, last.at).cpu_seconds > 0
