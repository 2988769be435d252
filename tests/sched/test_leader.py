"""Leader election rules without a server: who may take a Lease, and settings checks."""

from __future__ import annotations

import asyncio
import threading
import time

import msgspec
import pytest

from kubesalvo.sched.client import ApiClient, Credentials
from kubesalvo.sched.leader import (
    ElectionThread,
    LeaderElectionSettings,
    LeaderElector,
    LeaseSpec,
    may_acquire,
    next_try_in,
)
from kubesalvo.sched.metrics import SchedulerMetrics
from tests.helpers.deploy import bind_rules, delete_cluster_rbac, service_account_token


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


def test_a_candidate_tries_again_each_retry_period_or_when_the_holders_lease_ends():
    other = LeaseSpec(holder_identity="other", lease_duration_seconds=15)
    # Far from the end: one retry period.
    assert (
        next_try_in(other, "me", observed_at=100.0, now=101.0, retry_period=2.0, lease_duration=15)
        == 2.0
    )
    # The end comes first: wake just past it, when may_acquire says yes.
    wait = next_try_in(
        other, "me", observed_at=100.0, now=114.5, retry_period=2.0, lease_duration=15
    )
    assert 0.5 < wait < 0.51
    assert may_acquire(other, "me", observed_at=100.0, now=114.5 + wait, lease_duration=15)
    # Already over (a failed write, a 409 lost to another candidate): try again at once.
    assert next_try_in(other, "me", 100.0, 120.0, 2.0, 15) == pytest.approx(0.001)
    # Nobody holds it, or we do, or we never read it: the plain period.
    for spec in (None, LeaseSpec(), LeaseSpec(holder_identity="me")):
        assert next_try_in(spec, "me", 100.0, 114.5, 2.0, 15) == 2.0


def test_a_standby_takes_a_dead_leaders_lease_within_its_duration_and_one_retry_period():
    """Simulated time: the leader renews every period until it dies; the standby polls
    every period from a phase of its own. Whatever the phases, it takes the Lease at most
    lease_duration + retry_period after the kill."""
    retry, duration = 2.0, 15.0
    for leader_phase in (0.0, 0.3, 1.1, 1.99):
        for standby_phase in (0.0, 0.7, 1.5, 1.999):
            killed = 10.0 + leader_phase
            renewals = [leader_phase + k * retry for k in range(100)]
            last_renewal = max(r for r in renewals if r <= killed)
            spec, seen, observed_at = (
                LeaseSpec(holder_identity="leader", lease_duration_seconds=15),
                None,
                0.0,
            )
            now = retry + standby_phase  # the leader has renewed once by then
            while True:
                renewed = max(r for r in renewals if r <= min(now, killed))
                if renewed != seen:  # the record changed since the last read
                    seen, observed_at = renewed, now
                if may_acquire(spec, "me", observed_at, now, duration):
                    break
                now += next_try_in(spec, "me", observed_at, now, retry, duration)
            assert last_renewal <= killed and now - killed <= duration + retry + 0.002


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


# -- against the real API server ---------------------------------------------------------


def elector(client, namespace: str, identity: str, log: list, release: bool = True, metrics=None):
    settings = LeaderElectionSettings(
        namespace=namespace,
        name="kubesalvo",
        identity=identity,
        lease_duration=2.0,
        renew_deadline=1.5,
        retry_period=0.3,
        release_on_cancel=release,
    )
    return LeaderElector(
        client,
        settings,
        on_started_leading=lambda: log.append(("started", identity)),
        on_stopped_leading=lambda: log.append(("stopped", identity)),
        metrics=metrics,
    )


async def lease(api, namespace: str) -> dict:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/kubesalvo"
    return msgspec.json.decode((await api.request("GET", path)).body)["spec"]


@pytest.mark.integration
@pytest.mark.parametrize("release", [False, True], ids=["lease-expires", "lease-released"])
async def test_one_elector_leads_and_the_other_takes_over_when_it_stops(
    release, api, namespace, eventually
):
    log: list = []
    first = elector(api, namespace, "first", log, release)
    second = elector(api, namespace, "second", log, release)
    first.start()
    await eventually(lambda: first.is_leader, what="the first elector leading")
    second.start()
    try:
        await eventually(lambda: second.observed_holder == "first", what="the second seeing it")
        assert not second.is_leader
        assert (await lease(api, namespace))["holderIdentity"] == "first"

        await first.stop()
        assert not first.is_leader
        await eventually(lambda: second.is_leader, timeout=15, what="the takeover")
        spec = await lease(api, namespace)
        assert spec["holderIdentity"] == "second"
        assert spec["leaseTransitions"] == 1
        assert log == [("started", "first"), ("stopped", "first"), ("started", "second")]
    finally:
        await first.stop()
        await second.stop()


@pytest.mark.integration
async def test_a_leader_that_cannot_renew_steps_down_and_the_other_takes_over(
    proxied_api, proxy, api, namespace, eventually
):
    log: list = []
    metrics = SchedulerMetrics()
    cut_off = elector(proxied_api, namespace, "cut-off", log, release=False, metrics=metrics)
    standby = elector(api, namespace, "standby", log)
    cut_off.start()
    await eventually(lambda: cut_off.is_leader, what="the first elector leading")
    leading = b'leader_election_master_status{name="kubesalvo"}'
    assert leading + b" 1.0" in metrics.render()
    standby.start()
    try:
        await eventually(lambda: standby.observed_holder == "cut-off", what="the standby seeing it")
        # From now on every Lease request of the leader is throttled: it cannot renew.
        proxy.faults.throttle_match = "/leases/"
        proxy.faults.throttle = 1_000_000
        await eventually(lambda: not cut_off.is_leader, timeout=10, what="stepping down")
        assert ("stopped", "cut-off") in log
        assert leading + b" 0.0" in metrics.render()
        await eventually(lambda: standby.is_leader, timeout=15, what="the takeover")
        assert log[-1] == ("started", "standby")
        assert [entry for entry in log if entry[0] == "started"].count(("started", "cut-off")) == 1
    finally:
        await cut_off.stop()
        await standby.stop()


@pytest.mark.integration
async def test_the_election_thread_renews_while_the_schedulers_loop_is_busy(
    api, namespace, eventually
):
    """A burst holds the scheduler's loop for seconds; the Lease is renewed on a thread of
    its own meanwhile, so a busy leader does not step down (an elector on that loop does,
    as the second half shows). Its callbacks run on the scheduler's loop."""
    log: list = []
    settings = LeaderElectionSettings(
        namespace=namespace,
        name="kubesalvo",
        identity="busy",
        lease_duration=2.0,
        renew_deadline=1.5,
        retry_period=0.3,
    )
    threads: list = []
    election = ElectionThread(
        api,
        settings,
        on_started_leading=lambda: (log.append("started"), threads.append(threading.get_ident())),
        on_stopped_leading=lambda: log.append("stopped"),
    )
    election.start()
    try:
        await eventually(lambda: election.is_leader and log == ["started"], what="leading")
        assert threads == [threading.get_ident()]  # called on the scheduler's loop
        before = (await lease(api, namespace))["renewTime"]
        busy_until = time.monotonic() + 3 * settings.renew_deadline
        while time.monotonic() < busy_until:  # pure Python holding the loop (and the GIL)
            sum(range(1000))
        assert election.is_leader
        assert (await lease(api, namespace))["renewTime"] > before
        await asyncio.sleep(0.1)
        assert log == ["started"]  # never stepped down
    finally:
        await election.stop()
    assert not election.is_leader
    assert log == ["started", "stopped"]

    # The same block with the elector on the loop itself: it cannot renew and steps down.
    on_loop: list = []
    same = elector(api, namespace, "on-loop", on_loop, release=True)
    same.start()
    try:
        await eventually(lambda: same.is_leader, timeout=10, what="the on-loop elector leading")
        busy_until = time.monotonic() + 3 * settings.renew_deadline
        while time.monotonic() < busy_until:
            sum(range(1000))
        await eventually(lambda: ("stopped", "on-loop") in on_loop, what="stepping down")
    finally:
        await same.stop()


LEASE_RULES = [
    {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["get", "create", "update"],
    }
]


@pytest.mark.integration
async def test_a_refused_lease_is_reported_until_the_account_may_use_it(
    control_plane, namespace, caplog
):
    """A Role for another namespace: the elector says why (readiness fails on it) and logs
    the refusal once; once the account may use the Lease, it leads and the refusal clears."""
    token = service_account_token(control_plane, namespace, "elector")
    credentials = Credentials(
        server=control_plane.server, ca_file=str(control_plane.ca_file), token=token
    )
    async with ApiClient(credentials, qps=0) as client:
        candidate = elector(client, namespace, "me", [])
        for _ in range(3):
            assert not await candidate._try_acquire_or_renew()
        assert candidate.refusal.startswith("403 Forbidden")
        assert 'leases.coordination.k8s.io "kubesalvo" is forbidden' in candidate.refusal
        refused = [r for r in caplog.records if "read refused" in r.getMessage()]
        assert len(refused) == 1 and f"leases in {namespace}" in refused[0].getMessage()

        role = bind_rules(control_plane, namespace, "elector", [], LEASE_RULES)
        try:
            deadline = time.monotonic() + 30
            while not await candidate._try_acquire_or_renew():
                assert time.monotonic() < deadline, candidate.refusal
                await asyncio.sleep(0.3)
        finally:
            delete_cluster_rbac(control_plane, role)
        assert candidate.refusal == ""
