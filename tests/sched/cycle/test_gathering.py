"""The gathering window's decisions (sched/cycle/gathering.py), on a fake clock."""

from __future__ import annotations

import pytest

from kubesalvo.sched.cycle.gathering import HOLD, Gathering
from kubesalvo.sched.queue.clock import FakeClock

WINDOW = 0.010  # the default burstGatheringWindow


def test_the_quiet_gap_is_the_window_itself():
    gathering = Gathering.for_window(WINDOW)
    assert gathering.quiet == WINDOW


def test_a_lone_pod_on_an_idle_scheduler_is_taken_at_once():
    clock = FakeClock()
    gathering = Gathering.for_window(WINDOW)
    gathering.arrived(clock.now())
    assert gathering.wait(clock.now(), clock.now(), ready=1, max_pods=1000) == 0.0


def test_a_pod_more_than_a_window_after_the_previous_one_is_taken_at_once():
    clock = FakeClock()
    gathering = Gathering.for_window(WINDOW)
    gathering.arrived(clock.now())
    clock.step(0.011)  # a trickle, slower than 100 pods/s
    gathering.arrived(clock.now())
    assert gathering.wait(clock.now(), clock.now(), ready=1, max_pods=1000) == 0.0


def test_pods_arriving_together_are_gathered_for_the_window():
    clock = FakeClock()
    gathering = Gathering.for_window(WINDOW)
    started = clock.now()
    gathering.arrived(clock.now())
    gathering.arrived(clock.now())  # a second pod in the same instant
    assert gathering.wait(clock.now(), started, ready=2, max_pods=1000) == pytest.approx(WINDOW)
    clock.step(0.004)
    gathering.arrived(clock.now())  # more keep coming, but the window is the bound
    assert gathering.wait(clock.now(), started, ready=3, max_pods=1000) == pytest.approx(0.006)
    clock.step(0.006)
    assert gathering.wait(clock.now(), started, ready=3, max_pods=1000) == 0.0


def test_a_gathering_ends_once_the_arrivals_pause_for_the_quiet_gap():
    clock = FakeClock()
    gathering = Gathering(window=WINDOW, quiet=0.002)
    started = clock.now()
    gathering.arrived(clock.now())
    gathering.arrived(clock.now())
    assert gathering.wait(clock.now(), started, ready=2, max_pods=1000) == pytest.approx(0.002)
    clock.step(0.001)
    gathering.arrived(clock.now())  # the quiet gap starts again
    assert gathering.wait(clock.now(), started, ready=3, max_pods=1000) == pytest.approx(0.002)
    clock.step(0.002)  # nothing came for the quiet gap
    assert gathering.wait(clock.now(), started, ready=3, max_pods=1000) == 0.0


def test_a_surge_that_keeps_coming_is_cut_at_the_window():
    clock = FakeClock()
    gathering = Gathering.for_window(WINDOW)
    started = clock.now()
    gathering.arrived(clock.now())
    ready = 1
    while True:
        clock.step(0.0005)  # 2,000 pods/s, without a pause
        gathering.arrived(clock.now())
        ready += 1
        delay = gathering.wait(clock.now(), started, ready, max_pods=1000)
        if delay == 0.0:
            break
        # No wait reaches past the window.
        assert clock.now() + delay <= started + WINDOW + 1e-12
    # Taken at the first look past the window (arrivals, and looks, every 0.5 ms).
    assert WINDOW - 1e-9 <= clock.now() - started <= WINDOW + 0.0005


def test_a_full_burst_is_taken_without_waiting():
    clock = FakeClock()
    gathering = Gathering.for_window(WINDOW)
    gathering.arrived(clock.now())
    gathering.arrived(clock.now())
    assert gathering.wait(clock.now(), clock.now(), ready=1000, max_pods=1000) == 0.0
    assert gathering.wait(clock.now(), clock.now(), ready=999, max_pods=1000) > 0.0


def test_a_window_of_zero_never_waits():
    clock = FakeClock()
    gathering = Gathering.for_window(0.0)
    gathering.arrived(clock.now())
    gathering.arrived(clock.now())
    assert gathering.wait(clock.now(), clock.now(), ready=2, max_pods=1000) == 0.0


def test_no_arrival_noted_means_no_wait():
    clock = FakeClock()
    gathering = Gathering.for_window(WINDOW)
    assert gathering.wait(clock.now(), clock.now(), ready=1, max_pods=1000) == 0.0


# -- while binds wait for the binder's slots ---------------------------------------------


def test_a_lone_pod_is_held_while_binds_wait_for_a_slot_and_asks_again_each_window():
    clock = FakeClock()
    gathering = Gathering.for_window(WINDOW)
    started = clock.now()
    gathering.arrived(clock.now())
    assert gathering.wait(clock.now(), started, 1, 1000, binds_waiting=0) == 0.0
    assert gathering.wait(clock.now(), started, 1, 1000, binds_waiting=3) == pytest.approx(WINDOW)


def test_a_held_gathering_outlasts_the_window_and_the_quiet_gap_up_to_the_hold():
    clock = FakeClock()
    gathering = Gathering.for_window(WINDOW)
    started = clock.now()
    gathering.arrived(clock.now())
    looks = 0
    while True:
        delay = gathering.wait(clock.now(), started, 1, 1000, binds_waiting=50)
        if delay == 0.0:
            break
        assert delay <= WINDOW and clock.now() + delay <= started + HOLD + 1e-9
        clock.step(delay)
        looks += 1
    assert clock.now() - started == pytest.approx(HOLD)
    assert looks == pytest.approx(HOLD / WINDOW, abs=1)


def test_a_held_gathering_ends_as_soon_as_no_bind_waits():
    clock = FakeClock()
    gathering = Gathering.for_window(WINDOW)
    started = clock.now()
    gathering.arrived(clock.now())
    clock.step(0.2)  # far past the window, held by the binder's queue
    assert gathering.wait(clock.now(), started, 1, 1000, binds_waiting=1) > 0.0
    assert gathering.wait(clock.now(), started, 1, 1000, binds_waiting=0) == 0.0


def test_a_full_burst_is_taken_even_while_binds_wait():
    clock = FakeClock()
    gathering = Gathering.for_window(WINDOW)
    gathering.arrived(clock.now())
    assert gathering.wait(clock.now(), clock.now(), 1000, 1000, binds_waiting=500) == 0.0


def test_a_window_of_zero_never_waits_even_while_binds_wait():
    clock = FakeClock()
    gathering = Gathering.for_window(0.0)
    gathering.arrived(clock.now())
    assert gathering.wait(clock.now(), clock.now(), 1, 1000, binds_waiting=500) == 0.0


def test_a_window_longer_than_the_hold_bounds_a_held_gathering():
    clock = FakeClock()
    gathering = Gathering.for_window(2.0)
    started = clock.now()
    gathering.arrived(clock.now())
    clock.step(1.5)
    assert gathering.wait(clock.now(), started, 1, 1000, binds_waiting=1) == pytest.approx(0.5)
    clock.step(0.5)
    assert gathering.wait(clock.now(), started, 1, 1000, binds_waiting=1) == 0.0
