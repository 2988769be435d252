"""``kubesalvo run`` as a process against the real control plane.

Every check reads the outcome back from the API server and judges it independently of the
scheduler's code: feasibility (resources, host ports, taints, node selectors and required
node affinity) is recomputed from the API objects by tests/helpers/feasibility.py, with its
own quantity parser.
Covered: bad configuration files (exit 2 with the field path), 2,000 mixed pods onto 500
kwok nodes bound exactly once and feasibly, FailedScheduling and PodScheduled=False for a
pod that fits nowhere and its binding once a node that fits is added, ``kubesalvo explain``
for both, SIGTERM draining binds, kill -9 in the middle of the bursts followed by a
restart, two replicas under leader election with the leader killed, and the fault proxy
(lost bind answers, 5xx, 429 with Retry-After, 410 on watches, dropped watches): in every
case each pod is bound exactly once.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesalvo.core.synthetic import make_pods, namespace_objects, priority_class_objects
from kubesalvo.sched.client import load_credentials
from kubesalvo.sched.cluster.processes import free_ports
from kubesalvo.sched.debug_token import read_token
from kubesalvo.sched.faultproxy.proxy import FaultProxy
from tests.helpers.feasibility import placement_problems

pytestmark = pytest.mark.integration

FLEET_NODES = 500
FLEET_SEED = 0
# The least a scheduler's configuration says: no leader election (the tests' processes
# start alone); the tests add their own settings after it.
ELECTION_OFF = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
"""
CONFIG = (
    ELECTION_OFF
    + """\
clientConnection:
  qps: 5000
  burst: 10000
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
kubesalvo:
  maxBurstPods: {max_burst}
  burstGatheringWindow: 20ms
"""
)


LEADER_ELECTION = """\
  leaderElect: true
  resourceName: {lease}
  resourceNamespace: kube-system
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 1s
"""


# --- the scheduler process ------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SchedulerProcess:
    """``kubesalvo run`` in a subprocess, its logs in a file, its HTTP ports on loopback."""

    def __init__(
        self,
        folder: Path,
        kubeconfig: Path | None,
        config: str,
        name: str = "run",
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        """``kubeconfig`` None: in-cluster credentials (``env`` says where); ``args`` are
        added to the command line (later flags win). Metrics are read on a plain loopback
        port; HTTPS is off unless ``args`` ask for it."""
        self.folder = folder
        self.config = folder / f"{name}.yaml"
        self.config.write_text(config)
        self.log = folder / f"{name}.log"
        self.debug_token_file = folder / f"{name}.debug-token"
        self._kubeconfig = kubeconfig
        self._args = args
        self._env = env
        self._start()

    def _start(self) -> None:
        # Two distinct ports, none of those the caller's args name (a port free when
        # chosen may still be taken before the process binds it: see wait_ready).
        taken = {a for a in self._args if a.isdigit()}
        while True:
            self.metrics_port, self.debug_port = free_ports(2)
            if not {str(self.metrics_port), str(self.debug_port)} & taken:
                break
        argv = [
            sys.executable, "-m", "kubesalvo.sched.cli", "run", "--config", str(self.config),
            *(["--kubeconfig", str(self._kubeconfig)] if self._kubeconfig is not None else []),
            "--secure-port", "0", "--insecure-port", str(self.metrics_port),
            "--debug-port", str(self.debug_port), "--log-format", "json", "-v", "4",
            "--debug-token-file", str(self.debug_token_file),
            *self._args,
        ]  # fmt: skip
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(self._env or {})}
            )

    @property
    def debug_token(self) -> str:
        return read_token(self.debug_token_file)

    def get(self, url: str) -> tuple[int, bytes]:
        """GET ``url``; on the debug port, with the token of the pages."""
        request = urllib.request.Request(url)
        if url.startswith(f"http://127.0.0.1:{self.debug_port}/"):
            request.add_header("Authorization", f"Bearer {self.debug_token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        restarts = 0
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                # Another process took one of its ports between the choice and the bind:
                # start again on fresh ports (the suite's processes race for them).
                if "address already in use" in self.tail() and restarts < 3:
                    restarts += 1
                    self._start()
                    continue
                pytest.fail(f"scheduler exited {self.process.returncode}:\n{self.tail()}")
            try:
                if self.get(f"http://127.0.0.1:{self.metrics_port}/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        pytest.fail(f"scheduler not ready within {timeout:.0f}s:\n{self.tail()}")

    def debug(self, path: str) -> Any:
        return json.loads(self.get(f"http://127.0.0.1:{self.debug_port}{path}")[1])

    def metric(self, metric: str, **labels: str) -> float:
        text = self.get(f"http://127.0.0.1:{self.metrics_port}/metrics")[1].decode()
        wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        pattern = re.compile(rf"^{re.escape(metric)}(?:\{{([^}}]*)\}})? (\S+)$", re.M)
        for match in pattern.finditer(text):
            found = ",".join(sorted((match.group(1) or "").split(",")))
            if found == wanted or (not labels and not match.group(1)):
                return float(match.group(2))
        return 0.0

    def wait_metric(self, metric: str, at_least: float, timeout: float, **labels: str) -> None:
        """Wait until the scheduler's ``metric`` (with ``labels``) reaches ``at_least``."""
        deadline = time.monotonic() + timeout
        while self.metric(metric, **labels) < at_least:
            assert time.monotonic() < deadline, self.tail()
            time.sleep(0.02)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def terminate(self, timeout: float = 60.0, signum: int = signal.SIGTERM) -> int:
        self.process.send_signal(signum)
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def scheduler(control_plane, tmp_path) -> Iterator[Any]:
    """``scheduler(max_burst=..., name=..., lease=...)`` starts a ready ``kubesalvo run``
    (with leader election on the named Lease if given); all are killed at the end."""
    started: list[SchedulerProcess] = []

    def start(
        max_burst: int = 1000, name: str = "run", lease: str = "", kubeconfig: Path | None = None
    ) -> SchedulerProcess:
        config = CONFIG.format(max_burst=max_burst)
        if lease:
            config = config.replace("  leaderElect: false\n", LEADER_ELECTION.format(lease=lease))
        process = SchedulerProcess(tmp_path, kubeconfig or control_plane.kubeconfig, config, name)
        started.append(process)
        process.wait_ready()
        return process

    yield start
    for process in started:
        process.kill()


@pytest.fixture(scope="module")
def fleet(control_plane) -> list[dict[str, Any]]:
    """The 500-node synthetic fleet, with the namespaces and PriorityClasses pods use."""
    nodes = control_plane.add_nodes(FLEET_NODES, FLEET_SEED)
    control_plane.create(namespace_objects(), exist_ok=True)
    control_plane.create(priority_class_objects(), exist_ok=True)
    return nodes


# --- reading the outcome back -----------------------------------------------------------


async def _list(client: Any, path: str, **params: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    query = {"limit": "500", **params}
    while True:
        page = await client.request("GET", path, params=query)
        items.extend(page.get("items") or [])
        token = page.get("metadata", {}).get("continue")
        if not token:
            return items
        query = {**query, "continue": token}


def list_objects(control_plane: Any, path: str, **params: str) -> list[dict[str, Any]]:
    return control_plane.call(lambda client: _list(client, path, **params))


def delete_pods(control_plane: Any, pods: list[dict[str, Any]]) -> None:
    async def delete(client: Any) -> None:
        slots = asyncio.Semaphore(32)

        async def one(pod: dict[str, Any]) -> None:
            meta = pod["metadata"]
            async with slots:
                try:
                    await client.request(
                        "DELETE",
                        f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                        {"gracePeriodSeconds": 0},
                    )
                except Exception as error:
                    if getattr(error, "status", None) != 404:
                        raise

        await asyncio.gather(*(one(p) for p in pods))

    control_plane.call(delete)


def delete_nodes(control_plane: Any, nodes: list[dict[str, Any]]) -> None:
    async def delete(client: Any) -> None:
        for node in nodes:
            await client.request("DELETE", f"/api/v1/nodes/{node['metadata']['name']}")

    control_plane.call(delete)


def pod_scheduled(pod: dict[str, Any]) -> dict[str, Any] | None:
    for condition in pod.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled":
            return condition
    return None


def pod_outcomes(control_plane: Any, path: str) -> dict[str, str]:
    """Each listed pod's outcome so far: ``on NODE`` once bound, else the message of its
    PodScheduled=False condition (a pod with neither is left out)."""
    found = {}
    for pod in list_objects(control_plane, path):
        condition = pod_scheduled(pod) or {}
        if (pod.get("spec") or {}).get("nodeName"):
            found[pod["metadata"]["name"]] = "on " + pod["spec"]["nodeName"]
        elif condition.get("status") == "False":
            found[pod["metadata"]["name"]] = condition["message"]
    return found


def settled(process: SchedulerProcess, timeout: float, done: Any) -> None:
    """Wait until the scheduler has nothing active or binding and ``done()`` holds.

    ``done`` reads the API server, which costs the shared 2 cores far more than the
    scheduler's own debug page: it is only asked when the scheduler is idle.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        queue = process.debug("/debug/queue")
        idle = (
            queue["pending"]["active"] == 0
            and queue["inFlight"] == 0
            and queue["bindsInFlight"] == 0
        )
        if idle and done():
            return
        time.sleep(2.0 if idle else 0.5)
    pytest.fail(f"not settled within {timeout:.0f}s:\n{process.tail()}")


def burst(count: int, seed: int) -> list[dict[str, Any]]:
    return make_pods(count, seed, "mixed", prefix=f"r{secrets.token_hex(2)}")


def after_the_dust(control_plane: Any, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Our pods once no more binds land: a killed scheduler's requests already sent are
    still applied by the API server for a moment after it died."""
    before = ours(pods, list_objects(control_plane, "/api/v1/pods"))
    while True:
        time.sleep(2.0)
        again = ours(pods, list_objects(control_plane, "/api/v1/pods"))
        if [p["spec"].get("nodeName") for p in again] == [
            p["spec"].get("nodeName") for p in before
        ]:
            return again
        before = again


def ours(pods: list[dict[str, Any]], listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}
    return [p for p in listed if (p["metadata"]["namespace"], p["metadata"]["name"]) in names]


def all_decided(control_plane: Any, pods: list[dict[str, Any]]) -> bool:
    """Whether each of our pods is bound or was reported Unschedulable."""
    return all(
        p["spec"].get("nodeName") or (pod_scheduled(p) or {}).get("reason") == "Unschedulable"
        for p in ours(pods, list_objects(control_plane, "/api/v1/pods"))
    )


def bound_uids(pods: list[dict[str, Any]]) -> set[str]:
    return {p["metadata"]["uid"] for p in pods if p["spec"].get("nodeName")}


def problems_now(control_plane: Any) -> list[str]:
    """What is wrong with every placement in the cluster as the API server has it now."""
    nodes = list_objects(control_plane, "/api/v1/nodes")
    return placement_problems(list_objects(control_plane, "/api/v1/pods"), nodes)


# --- tests ----------------------------------------------------------------------------------


BAD_CONFIGS = [
    (
        "profiles:\n- schedulerName: a\n  plugins:\n    score:\n"
        "      enabled:\n      - name: Bogus\n",
        'profiles[0].plugins.score.enabled[0].name: Unsupported value: "Bogus"',
    ),
    ("clientConnection:\n  qqps: 5\n", "clientConnection.qqps: Unknown field"),
    ("podMaxBackoffSeconds: -1\n", "podMaxBackoffSeconds: Invalid value: -1"),
]


@pytest.mark.parametrize(("body", "expected"), BAD_CONFIGS)
def test_a_bad_config_file_is_refused_with_exit_2_and_its_field_path(tmp_path, body, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + body
    )
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "run", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr
    assert done.stdout == ""


def test_without_a_kubeconfig_outside_a_cluster_run_says_so_and_exits_1(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    # Nothing in kubectl's order either: no $KUBECONFIG, no ~/.kube/config.
    env.pop("KUBECONFIG", None)
    env["HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "run"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1
    assert "cannot load credentials from in-cluster service account" in done.stderr


def test_2000_mixed_pods_onto_500_nodes_are_bound_once_and_feasibly(
    control_plane, fleet, scheduler
):
    pods = burst(2000, seed=11)
    process = scheduler(max_burst=1000)
    began = time.monotonic()
    control_plane.create(pods)
    created = time.monotonic() - began
    try:

        def all_listed_and_decided() -> bool:
            listed = ours(pods, list_objects(control_plane, "/api/v1/pods"))
            return len(listed) == len(pods) and all(
                p["spec"].get("nodeName") or (pod_scheduled(p) or {}).get("status") == "False"
                for p in listed
            )

        settled(process, 240, all_listed_and_decided)
        decided = time.monotonic() - began
        print(f"2000 pods: created in {created:.1f}s, all decided after {decided:.1f}s")
        listed = ours(pods, list_objects(control_plane, "/api/v1/pods"))
        everything = list_objects(control_plane, "/api/v1/pods")
        nodes = list_objects(control_plane, "/api/v1/nodes")
        assert placement_problems(everything, nodes) == []
        bound = [p for p in listed if p["spec"].get("nodeName")]
        unbound = [p for p in listed if not p["spec"].get("nodeName")]
        # Exactly once: every successful bind the scheduler made is one pod bound now.
        assert process.metric("kubesalvo_binds_total", result="bound") == len(bound)
        assert process.metric("kubesalvo_binds_total", result="forgotten") == 0
        # Each informer listed once and watches since (a watch the server closes adds one).
        for resource in ("pods", "nodes", "namespaces"):
            assert process.metric("kubesalvo_informer_lists_total", resource=resource) == 1
            assert process.metric("kubesalvo_informer_watches_total", resource=resource) >= 1
        # The heap of the start (500 nodes) was frozen out of the collector's passes once
        # the informers synced, and every pass since is timed.
        assert process.debug("/debug/memory?top=1")["frozenObjects"] > 500
        assert (
            sum(
                process.metric("kubesalvo_gc_pause_seconds_count", generation=str(generation))
                for generation in range(3)
            )
            > 0
        )
        workload = Counter(p["metadata"]["labels"]["kubesalvo.io/workload"] for p in unbound)
        assert all(
            p["metadata"]["labels"]["kubesalvo.io/workload"] != "unschedulable" for p in bound
        )
        for pod in unbound:
            condition = pod_scheduled(pod)
            assert condition is not None and condition["reason"] == "Unschedulable", pod
            assert condition["message"].startswith(f"0/{len(nodes)} nodes are available")
        print(f"bound {len(bound)}, unbound by workload {dict(workload)}")
        # The same pods placed in one in-process burst on the empty fleet bind 1,761; the
        # rest ask for pod affinity or spread the cluster cannot give, or are made to fail.
        assert len(bound) >= 1600
    finally:
        process.kill()
        delete_pods(control_plane, pods)


def kwok_node(name: str, pool: str, cpu: str = "8", memory: str = "32Gi") -> dict[str, Any]:
    """A kwok node of its own pool (label ``kubesalvo.io/test-pool``), outside the fleet."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubesalvo.io/test-pool": pool},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
        },
    }


def test_a_pod_that_fits_nowhere_is_reported_and_bound_once_a_node_fits(
    control_plane, fleet, scheduler, namespace
):
    label = f"late-{secrets.token_hex(3)}"
    process = scheduler()
    nodes = list_objects(control_plane, "/api/v1/nodes")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "waiter", "namespace": namespace},
        "spec": {
            "schedulerName": "kubesalvo",
            "nodeSelector": {"kubesalvo.io/test-pool": label},
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
    control_plane.create([pod])
    path = f"/api/v1/namespaces/{namespace}/pods/waiter"
    expected = (
        f"0/{len(nodes)} nodes are available: {len(nodes)} node(s) didn't match Pod's node "
        "affinity/selector."
    )

    def reported() -> bool:
        condition = pod_scheduled(control_plane.call(lambda c: c.request("GET", path)))
        return condition is not None and condition.get("status") == "False"

    settled(process, 60, reported)
    condition = pod_scheduled(control_plane.call(lambda c: c.request("GET", path)))
    assert condition["reason"] == "Unschedulable"
    assert condition["message"].startswith(expected)
    events = list_objects(control_plane, f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
    failed = [e for e in events if e["reason"] == "FailedScheduling"]
    assert failed and failed[0]["note"].startswith(expected)
    assert failed[0]["regarding"]["name"] == "waiter" and failed[0]["type"] == "Warning"

    explain = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "explain", f"{namespace}/waiter",
         "--debug-url", f"http://127.0.0.1:{process.debug_port}",
         "--debug-token-file", str(process.debug_token_file)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert explain.returncode == 0, explain.stderr
    assert f"pod {namespace}/waiter: pending" in explain.stdout
    assert f"{len(nodes):>5}  node(s) didn't match Pod's node affinity/selector" in explain.stdout

    node_name = f"{label}-node"
    control_plane.create([kwok_node(node_name, label)])
    try:
        settled(
            process,
            60,
            lambda: (
                control_plane.call(lambda c: c.request("GET", path))["spec"].get("nodeName")
                == node_name
            ),
        )
        answer = process.debug(f"/debug/explain?pod={namespace}/waiter")
        assert answer["status"] == "placed" and answer["node"] == node_name
        assert answer["topNodes"][0]["node"] == node_name
        assert set(answer["topNodes"][0]["plugins"]) >= {"NodeResourcesFit", "TaintToleration"}
        assert "core.pernode" in answer["scoresFrom"]
    finally:
        delete_pods(control_plane, [pod])
        control_plane.call(lambda c: c.request("DELETE", f"/api/v1/nodes/{node_name}"))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_sigterm_or_sigint_drains_the_binds_in_flight_and_exits_0(
    control_plane, fleet, scheduler, signum
):
    pods = burst(400, seed=12)
    process = scheduler(max_burst=200)
    control_plane.create(pods)
    try:
        process.wait_metric("kubesalvo_binds_total", 1, 120, result="bound")
        assert process.terminate(signum=signum) == 0, process.tail()
        log = process.log.read_text()
        assert "draining binds and stopping" in log
        drained = [json.loads(line) for line in log.splitlines() if "drained" in line]
        assert drained and drained[0]["msg"].startswith("drained ")
        # Nothing was left half-done: every pod it bound is bound, none assumed twice.
        listed = ours(pods, list_objects(control_plane, "/api/v1/pods"))
        assert problems_now(control_plane) == []
        assert any(p["spec"].get("nodeName") for p in listed)
    finally:
        process.kill()
        delete_pods(control_plane, pods)


def test_kill_9_in_the_middle_and_a_restart_bind_every_pod_exactly_once(
    control_plane, fleet, scheduler
):
    pods = burst(800, seed=13)
    first = scheduler(max_burst=100, name="first")
    control_plane.create(pods)
    try:
        first.wait_metric("kubesalvo_binds_total", 50, 120, result="bound")
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait(10)
        before = after_the_dust(control_plane, pods)
        left = [p for p in before if not p["spec"].get("nodeName")]
        assert 0 < len(left) < len(pods), "the kill did not land in the middle"

        second = scheduler(max_burst=1000, name="second")
        settled(second, 240, lambda: all_decided(control_plane, pods))
        after = ours(pods, list_objects(control_plane, "/api/v1/pods"))
        bound_now = bound_uids(after)
        bound_before = bound_uids(before)
        # Nothing the first process bound moved, and the second bound only what was left.
        assert bound_before <= bound_now
        assert second.metric("kubesalvo_binds_total", result="bound") == len(
            bound_now - bound_before
        )
        assert second.metric("kubesalvo_binds_total", result="forgotten") == 0
        assert problems_now(control_plane) == []
    finally:
        delete_pods(control_plane, pods)


def test_of_two_replicas_only_the_leader_binds_and_the_other_takes_over_when_it_dies(
    control_plane, fleet, scheduler
):
    lease = f"kubesalvo-test-{secrets.token_hex(3)}"
    leader = scheduler(max_burst=100, name="leader", lease=lease)
    leader.wait_metric("leader_election_master_status", 1, 30, name=lease)
    standby = scheduler(max_burst=1000, name="standby", lease=lease)
    assert standby.metric("leader_election_master_status", name=lease) == 0
    pods = burst(600, seed=14)
    control_plane.create(pods)
    try:
        leader.wait_metric("kubesalvo_binds_total", 50, 150, result="bound")
        os.kill(leader.process.pid, signal.SIGKILL)
        leader.process.wait(10)
        before = ours(pods, list_objects(control_plane, "/api/v1/pods"))
        bound_before = bound_uids(before)
        # The standby never bound while the other led.
        assert standby.metric("kubesalvo_binds_total", result="bound") == 0
        assert standby.metric("kubesalvo_binds_total", result="failed") == 0

        settled(standby, 240, lambda: all_decided(control_plane, pods))
        assert standby.metric("leader_election_master_status", name=lease) == 1
        after = ours(pods, list_objects(control_plane, "/api/v1/pods"))
        bound_now = bound_uids(after)
        assert bound_before <= bound_now and len(bound_now) > len(bound_before)
        # At most what was left: binds the dead leader had sent may have landed after
        # ``before`` was read, but the standby never bound a pod a second time.
        assert (
            0
            < standby.metric("kubesalvo_binds_total", result="bound")
            <= len(bound_now - bound_before)
        )
        assert standby.metric("kubesalvo_binds_total", result="forgotten") == 0
        assert problems_now(control_plane) == []
    finally:
        delete_pods(control_plane, pods)


class ThreadedProxy:
    """The fault proxy on its own event loop thread, for a scheduler in a subprocess."""

    def __init__(self, kubeconfig: Path) -> None:
        credentials = load_credentials(str(kubeconfig))
        self.token = credentials.token
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.proxy = FaultProxy(credentials.server, upstream_ssl=credentials.ssl_context())
        asyncio.run_coroutine_threadsafe(self.proxy.start(), self.loop).result(10)

    def kubeconfig(self, folder: Path) -> Path:
        path = folder / "proxy-kubeconfig"
        path.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: proxy\n"
            f"clusters:\n- name: proxy\n  cluster:\n    server: {self.proxy.url}\n"
            f"users:\n- name: proxy\n  user:\n    token: {self.token}\n"
            "contexts:\n- name: proxy\n  context:\n    cluster: proxy\n    user: proxy\n"
        )
        return path

    def drop_watches(self) -> None:
        self.loop.call_soon_threadsafe(self.proxy.drop_watches)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


def test_through_faults_every_pod_is_bound_exactly_once(control_plane, fleet, scheduler, tmp_path):
    proxy = ThreadedProxy(control_plane.kubeconfig)
    faults = proxy.proxy.faults
    stats = proxy.proxy.stats
    try:
        # Lost answers of applied binds, throttling with Retry-After, 410 on watches.
        faults.bind_errors, faults.bind_error_after_forward = 30, True
        faults.throttle, faults.retry_after = 20, 1
        faults.gone_watches = 2
        process = scheduler(max_burst=100, kubeconfig=proxy.kubeconfig(tmp_path))
        pods = burst(500, seed=15)
        control_plane.create(pods)
        try:
            process.wait_metric("kubesalvo_binds_total", 100, 120, result="bound")
            proxy.drop_watches()
            # Now binds that fail before the API server sees them.
            faults.bind_errors, faults.bind_error_after_forward = 20, False
            settled(process, 240, lambda: all_decided(control_plane, pods))
            assert stats.bind_errors == 50 and stats.throttled == 20
            assert stats.gone >= 1 and stats.dropped >= 1
            listed = ours(pods, list_objects(control_plane, "/api/v1/pods"))
            bound = [p for p in listed if p["spec"].get("nodeName")]
            accepted = {
                path: count
                for path, count in stats.binds_accepted.items()
                if any(f"/pods/{p['metadata']['name']}/binding" in path for p in bound)
            }
            assert len(accepted) == len(bound)
            assert set(accepted.values()) == {1}
            assert problems_now(control_plane) == []
        finally:
            process.kill()
            delete_pods(control_plane, pods)
    finally:
        proxy.close()


TWO_PROFILES = """\
profiles:
- schedulerName: kubesalvo
- schedulerName: kubesalvo-binpack
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
"""


def test_one_process_serves_every_profile_and_leaves_other_schedulers_pods_alone(
    control_plane, fleet, scheduler, namespace, tmp_path
):
    label = f"profiles-{secrets.token_hex(3)}"
    names = [f"{label}-{i}" for i in range(3)]
    taint = {"key": "kubesalvo.io/test-pool", "value": label, "effect": "NoSchedule"}
    control_plane.create(
        [{**kwok_node(name, label), "spec": {"taints": [taint]}} for name in names]
    )

    def pod(name: str, scheduler_name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "schedulerName": scheduler_name,
                "nodeSelector": {"kubesalvo.io/test-pool": label},
                "tolerations": [{**taint, "operator": "Equal"}],
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                    }
                ],
            },
        }

    pods = (
        [pod(f"spread-{i}", "kubesalvo") for i in range(3)]
        + [pod(f"pack-{i}", "kubesalvo-binpack") for i in range(4)]
        + [pod("elsewhere", "someone-else")]
    )
    try:
        config = CONFIG.format(max_burst=1000) + TWO_PROFILES
        process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "profiles")
        try:
            process.wait_ready()
            # One at a time, so that each lands in its own burst after the last is counted.
            for p in pods:
                control_plane.create([p])
                time.sleep(0.3)

            def placed() -> dict[str, str]:
                listed = list_objects(control_plane, f"/api/v1/namespaces/{namespace}/pods")
                return {
                    p["metadata"]["name"]: p["spec"]["nodeName"]
                    for p in listed
                    if p["spec"].get("nodeName")
                }

            settled(process, 60, lambda: len(placed()) == 7)
            where = placed()
            assert "elsewhere" not in where
            assert len({where[f"spread-{i}"] for i in range(3)}) == 3  # LeastAllocated
            assert len({where[f"pack-{i}"] for i in range(4)}) == 1  # MostAllocated
            path = f"/api/v1/namespaces/{namespace}/pods/elsewhere"
            elsewhere = control_plane.call(lambda c: c.request("GET", path))
            assert pod_scheduled(elsewhere) is None  # not ours: no condition, no event
        finally:
            process.kill()
    finally:
        delete_pods(control_plane, pods)
        for name in names:
            control_plane.call(lambda c, name=name: c.request("DELETE", f"/api/v1/nodes/{name}"))
