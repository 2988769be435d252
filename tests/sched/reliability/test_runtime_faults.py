"""Faults under load on the real control plane: injected API errors for a whole burst,
kube-apiserver and etcd killed and restarted mid-burst, and the leader killed mid-burst.

Each runs at small scale in the default suite (300 pods onto the 500-node fleet) and at
full scale in the ``reliability`` suite (10,000 pods onto 1,000 nodes:
``python3 -m pytest -m reliability``). After each: every pod is decided, each bound pod's
binding was accepted exactly once (the fault proxy's record), no node is overcommitted
(tests/helpers/feasibility.py, which recomputes every node from the API objects), and
the scheduler was never restarted. Figures (throughput, recovery and takeover times) are
printed with the load average, since they are only as good as the machine was quiet.
"""

from __future__ import annotations

import datetime
import os
import signal
import threading
import time
from typing import Any

import pytest

from kubesalvo.core.plugins.coscheduling import gang
from tests.sched.reliability.runtime import (
    LARGE,
    SCALES,
    SMALL,
    Scale,
    bound_exactly_once,
    load_average,
    restart,
)
from tests.sched.test_app import (
    ThreadedProxy,
    burst,
    delete_pods,
    list_objects,
    ours,
    pod_scheduled,
    problems_now,
    settled,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def nodes(control_plane, request) -> list[dict[str, Any]]:
    """The synthetic fleet at the test's scale, with the namespaces pods use."""
    from kubesalvo.core.synthetic import namespace_objects, priority_class_objects

    scale: Scale = request.node.callspec.params["scale"]
    created = control_plane.add_nodes(scale.nodes, 0)
    control_plane.create(namespace_objects(), exist_ok=True)
    control_plane.create(priority_class_objects(), exist_ok=True)
    return created


def settle_timeout(scale: Scale) -> float:
    return 240.0 if scale.pods <= 1000 else 3600.0


def kill_at(scale: Scale) -> int:
    """How many binds to wait for before a kill, so that it lands mid-burst."""
    return scale.pods // 5 if scale.pods > 1000 else 1


def check_outcome(control_plane, pods, proxies) -> list[dict[str, Any]]:
    listed = ours(pods, list_objects(control_plane, "/api/v1/pods"))
    # No pod is lost: each one is still there or was deleted by a scheduler (through its
    # proxy) as a preemption victim, which kube-scheduler does too.
    there = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in listed}
    gone = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods} - there
    preempted = set().union(*(p.proxy.stats.pods_deleted for p in proxies))
    assert gone <= preempted, sorted(gone - preempted)[:10]
    if gone:
        print(f"\n{len(gone)} pods preempted (deleted by the scheduler as victims)")
    bound = [p for p in listed if p["spec"].get("nodeName")]
    bound_exactly_once([p.proxy for p in proxies], bound)
    gangs_whole_or_none(listed)
    # Every node's load is judged with every pod on it; a pod of another test still bound to
    # a node that test removed (its namespace is deleted asynchronously) overcommits nothing.
    keys = {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods}
    assert [
        problem
        for problem in problems_now(control_plane)
        if not problem.endswith(": no such node") or problem.split(" on ")[0] in keys
    ] == []
    return bound


def wait_binds(proxy: ThreadedProxy, at_least: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while sum(proxy.proxy.stats.binds_accepted.values()) < at_least:
        assert time.monotonic() < deadline, f"fewer than {at_least} binds within {timeout}s"
        time.sleep(0.05)


class WatchDropper:
    """Drops every watch through the proxy once the burst's first bind is accepted (so at
    least once in the middle of it, however fast the machine), then every ``period``
    seconds while running."""

    def __init__(self, proxy: ThreadedProxy, period: float) -> None:
        self.proxy, self.period = proxy, period
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        # bind_times grows by one per accepted bind (len() is safe beside the proxy's thread)
        self.accepted_before = len(proxy.proxy.stats.bind_times)

    def _run(self) -> None:
        stats = self.proxy.proxy.stats
        while len(stats.bind_times) <= self.accepted_before:
            if self.stop.wait(0.01):
                return
        self.proxy.drop_watches()
        while not self.stop.wait(self.period):
            self.proxy.drop_watches()

    def __enter__(self) -> WatchDropper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def with_gangs(count: int, seed: int) -> list[dict[str, Any]]:
    """A mixed burst of ``count`` pods, gangs included, but only whole ones: a gang cut
    short at the end of the list would wait for members that never come. Gang members
    bound before a fault count towards their gang's minimum when the rest is retried
    (they did not, and such a gang was never placed again: issue 16)."""
    pods = burst(count * 2, seed)
    members: dict[gang.GroupKey, int] = {}
    for pod in pods[:count]:
        key = gang.group_of(pod)
        if key is not None:
            members[key] = members.get(key, 0) + 1
    minimums = gang.group_minimums(pods[:count])
    return [
        p
        for p in pods[:count]
        if (key := gang.group_of(p)) is None or members[key] >= minimums[key]
    ]


def gangs_whole_or_none(pods: list[dict[str, Any]]) -> None:
    """Each gang has none or at least its minimum of members bound."""
    minimums = gang.group_minimums(pods)
    bound: dict[gang.GroupKey, int] = {}
    for pod in pods:
        key = gang.group_of(pod)
        if key is not None and pod["spec"].get("nodeName"):
            bound[key] = bound.get(key, 0) + 1
    assert [(str(k), n, minimums[k]) for k, n in bound.items() if n < minimums[k]] == []


def settle(control_plane, process, pods, scale) -> None:
    """Wait until every pod is decided; on failure name the undecided ones and their state."""

    def decided() -> bool:
        # A pod the scheduler parked as unschedulable is decided even when writing its
        # condition failed during an outage: like kube-scheduler, it does not rewrite it
        # until the pod is tried again (a cluster event, or 5 minutes).
        parked = {
            p["pod"] for p in process.debug("/debug/queue")["pods"] if p["queue"] == "unschedulable"
        }
        return all(
            p["spec"].get("nodeName")
            or (pod_scheduled(p) or {}).get("reason") == "Unschedulable"
            or f"{p['metadata']['namespace']}/{p['metadata']['name']}" in parked
            for p in ours(pods, list_objects(control_plane, "/api/v1/pods"))
        )

    try:
        settled(process, settle_timeout(scale), decided)
    except pytest.fail.Exception:
        listed = ours(pods, list_objects(control_plane, "/api/v1/pods"))
        undecided = [
            (p["metadata"]["name"], p["metadata"].get("labels", {}), p["status"].get("conditions"))
            for p in listed
            if not p["spec"].get("nodeName")
        ]
        queue = process.debug("/debug/queue")
        pytest.fail(f"undecided: {undecided[:10]}\nqueue: {queue}\n{process.tail(10)}")


def run_burst(control_plane, process, proxy, pods, scale) -> float:
    """Create ``pods`` and wait until all are decided; returns the seconds it took."""
    began = time.monotonic()
    control_plane.create(pods)
    settle(control_plane, process, pods, scale)
    return time.monotonic() - began


@pytest.mark.parametrize("scale", SCALES, ids=str)
def test_a_burst_under_10_percent_faults_binds_every_pod_exactly_once(
    control_plane, nodes, scheduler, tmp_path, scale
):
    proxy = ThreadedProxy(control_plane.kubeconfig)
    created: list[dict[str, Any]] = []
    try:
        process = scheduler(max_burst=scale.max_burst, kubeconfig=proxy.kubeconfig(tmp_path))
        clean_rate = None
        if scale.pods > 1000:
            # The same burst without faults first: what the faults cost in throughput.
            clean = with_gangs(scale.pods, seed=21)
            created += clean
            clean_rate = scale.pods / run_burst(control_plane, process, proxy, clean, scale)
            delete_pods(control_plane, clean)
        faults = proxy.proxy.faults
        faults.bind_error_rate = faults.lost_bind_rate = faults.throttle_rate = 0.1 / 3
        faults.retry_after, faults.seed = 1, 16
        pods = with_gangs(scale.pods, seed=22)
        created += pods
        with WatchDropper(proxy, period=5.0):
            seconds = run_burst(control_plane, process, proxy, pods, scale)
        faults.bind_error_rate = faults.lost_bind_rate = faults.throttle_rate = 0.0
        stats = proxy.proxy.stats
        bound = check_outcome(control_plane, pods, [proxy])
        assert stats.bind_errors > 0 and stats.throttled > 0 and stats.dropped > 0
        assert process.process.poll() is None, "the scheduler exited"
        print(
            f"\n{scale}: {len(bound)} bound in {seconds:.1f}s ({scale.pods / seconds:.0f} pods/s"
            + (f"; {clean_rate:.0f} pods/s without faults" if clean_rate else "")
            + f"); injected {stats.bind_errors} bind errors (half of them after the bind), "
            f"{stats.throttled} 429, {stats.dropped} dropped watches; load {load_average()}"
        )
    finally:
        delete_pods(control_plane, created)
        proxy.close()


# The default suite kills both in one run (each in its own half of the burst) to stay
# within its time; the reliability suite gives each its own 10,000-pod burst.
KILLS = [
    pytest.param(SMALL, ("kube-apiserver", "etcd"), id=f"{SMALL}-kube-apiserver-then-etcd"),
    pytest.param(
        LARGE, ("kube-apiserver",), marks=pytest.mark.reliability, id=f"{LARGE}-apiserver"
    ),
    pytest.param(LARGE, ("etcd",), marks=pytest.mark.reliability, id=f"{LARGE}-etcd"),
]


@pytest.mark.parametrize(("scale", "components"), KILLS)
def test_a_control_plane_process_killed_mid_burst_loses_no_pod_and_binds_none_twice(
    control_plane, nodes, scheduler, tmp_path, scale, components
):
    proxy = ThreadedProxy(control_plane.kubeconfig)
    pods = with_gangs(scale.pods, seed=23 + len(components[0]))
    share = len(pods) // len(components)
    try:
        process = scheduler(max_burst=scale.max_burst, kubeconfig=proxy.kubeconfig(tmp_path))
        began = time.monotonic()
        for index, component in enumerate(components):
            part = pods[
                index * share : (index + 1) * share if index + 1 < len(components) else None
            ]
            before = sum(proxy.proxy.stats.binds_accepted.values())
            control_plane.create(part)
            # A small burst is bound within a second: kill at its first bind, mid-burst.
            wait_binds(proxy, before + kill_at(scale), settle_timeout(scale))
            killed, ready = restart(control_plane, component)
            settle(control_plane, process, pods[: index * share + len(part)], scale)
            after = sorted(t for t, _ in proxy.proxy.stats.bind_times if t >= ready)
            recovery = (after[0] - ready) if after else float("nan")
            stats = proxy.proxy.stats
            print(
                f"\n{scale}, {component} killed after {kill_at(scale)}+ binds of {len(part)} "
                f"pods: down {ready - killed:.1f}s (kill to ready), first bind {recovery:.2f}s "
                f"after it was ready again; bindings accepted {len(stats.binds_accepted)}, "
                f"uncertain {len(stats.binds_uncertain)} so far; load {load_average()}"
            )
        seconds = time.monotonic() - began
        bound = check_outcome(control_plane, pods, [proxy])
        assert process.process.poll() is None, "the scheduler had to be restarted"
        print(f"{len(bound)} of {len(pods)} bound, all decided in {seconds:.1f}s")
    finally:
        delete_pods(control_plane, pods)
        proxy.close()


def _lease(control_plane, name: str) -> dict[str, Any]:
    path = f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}"
    return control_plane.call(lambda c: c.request("GET", path))


def _micro_time(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


LEASE_DURATION, RETRY_PERIOD = 4.0, 1.0  # test_app's LEADER_ELECTION


@pytest.mark.parametrize("scale", SCALES, ids=str)
def test_the_standby_takes_over_a_killed_leader_mid_burst_and_binds_only_once_it_leads(
    control_plane, nodes, scheduler, tmp_path, scale
):
    lease = f"kubesalvo-reliability-{os.getpid()}-{scale.pods}"
    proxies = [ThreadedProxy(control_plane.kubeconfig) for _ in range(2)]
    pods = with_gangs(scale.pods, seed=25)
    try:
        folders = [tmp_path / "leader", tmp_path / "standby"]
        for folder in folders:
            folder.mkdir()
        leader = scheduler(
            max_burst=scale.max_burst,
            name="leader",
            lease=lease,
            kubeconfig=proxies[0].kubeconfig(folders[0]),
        )
        leader.wait_metric("leader_election_master_status", 1, 30, name=lease)
        standby = scheduler(
            max_burst=scale.max_burst,
            name="standby",
            lease=lease,
            kubeconfig=proxies[1].kubeconfig(folders[1]),
        )
        control_plane.create(pods)
        wait_binds(proxies[0], kill_at(scale), settle_timeout(scale))
        killed = time.time()
        os.kill(leader.process.pid, signal.SIGKILL)
        leader.process.wait(10)
        settle(control_plane, standby, pods, scale)
        held = _lease(control_plane, lease)["spec"]
        acquired = _micro_time(held["acquireTime"])
        standby_binds = sorted(t for t, _ in proxies[1].proxy.stats.bind_times)
        # The standby holds the Lease now, took it after the kill, and bound nothing before.
        assert standby.metric("leader_election_master_status", name=lease) == 1
        assert acquired > killed
        assert standby_binds and standby_binds[0] >= acquired
        check_outcome(control_plane, pods, proxies)
        takeover = acquired - killed
        if scale.pods > 1000:
            # On a quiet machine; the small run only reports it (timing is not asserted
            # in the default suite, whose machine is shared).
            # The bound (leader.next_try_in), plus half a second for the GET and
            # PUT of the Lease on a loaded API server.
            assert takeover <= LEASE_DURATION + RETRY_PERIOD + 0.5
        print(
            f"\n{scale}: leader killed after {sum(proxies[0].proxy.stats.binds_accepted.values())}"
            f" binds; standby took the Lease {takeover:.2f}s later (lease {LEASE_DURATION:.0f}s, "
            f"retry {RETRY_PERIOD:.0f}s), first bind {standby_binds[0] - acquired:.2f}s after "
            f"that, {len(standby_binds)} binds; load {load_average()}"
        )
    finally:
        delete_pods(control_plane, pods)
        for proxy in proxies:
            proxy.close()
