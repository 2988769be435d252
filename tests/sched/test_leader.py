"""Leader election rules without a server: who may take a Lease, and settings checks.

Two electors racing for a real Lease are in test_leader_integration.py.
"""

from __future__ import annotations

import pytest

from kubesalvo.sched.leader import LeaderElectionSettings, LeaseSpec, may_acquire


def test_an_unheld_lease_may_be_taken():
    assert may_acquire(LeaseSpec(), "me", observed_at=100.0, now=100.0, lease_duration=15)
    assert may_acquire(LeaseSpec(holder_identity=""), "me", 100.0, 100.0, 15)


def test_the_holder_may_always_renew_its_own_lease():
    spec = LeaseSpec(holder_identity="me", lease_duration_seconds=15)
    assert may_acquire(spec, "me", observed_at=0.0, now=1000.0, lease_duration=15)


def test_another_holders_lease_is_respected_until_it_has_not_changed_for_its_duration():
    spec = LeaseSpec(holder_identity="other", lease_duration_seconds=15)
    assert not may_acquire(spec, "me", observed_at=100.0, now=114.9, lease_duration=30)
    assert may_acquire(spec, "me", observed_at=100.0, now=115.0, lease_duration=30)


def test_a_lease_without_a_duration_uses_ours():
    spec = LeaseSpec(holder_identity="other")
    assert not may_acquire(spec, "me", observed_at=100.0, now=110.0, lease_duration=15)
    assert may_acquire(spec, "me", observed_at=100.0, now=115.0, lease_duration=15)


@pytest.mark.parametrize(
    ("changes", "text"),
    [
        ({"identity": ""}, "identity"),
        ({"lease_duration": 10, "renew_deadline": 10}, "leaseDuration"),
        ({"renew_deadline": 2, "retry_period": 2}, "renewDeadline"),
    ],
)
def test_inconsistent_timings_are_refused(changes, text):
    settings = LeaderElectionSettings(identity="me")
    for key, value in changes.items():
        setattr(settings, key, value)
    with pytest.raises(ValueError, match=text):
        settings.validate()


def test_kube_scheduler_default_timings_are_accepted():
    LeaderElectionSettings(identity="me").validate()
