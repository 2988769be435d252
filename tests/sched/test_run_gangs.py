"""Gangs and GroupPriority in ``kubesalvo run`` on the real control plane (kwok nodes).

Each test has its own tainted kwok nodes (a pool label and a taint of the test's name),
which only its own pods select and tolerate, and its own scheduler process with
Coscheduling on (a short ``permitWaitingTimeSeconds``) and GroupPriority as the queue
sort:

* a gang of 8 that fits is bound whole; 8 with room for 7 bind none;
* 7 members of a gang of 8: they wait, then are rejected for the timeout (an event says
  so) and back off; the 8th, created after that, brings them all in and all 8 are bound;
* a Job's pods, created by the Job controller in growing batches, are assembled into
  their gang and bound whole;
* members bound before a scheduler restart count towards the minimum of a replacement;
* two gangs of 6 with room for 8: one is bound whole, the other waits with nothing
  bound (never 4 + 4), and is bound whole once the first is deleted;
* 30 pods of mixed groupPriority and QoS class with room for 10: the 10 bound are the
  highest groupPriority, then the best QoS class; a groupPriority that is not an integer
  counts as 0 and gets one Warning event;
* a PodGroup (scheduler-plugins' CRD, installed here from deploy/crds/): its minMember and
  scheduleTimeoutSeconds win over the labels and args, and kubesalvo writes its status.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesalvo.sched.explain import render
from tests.helpers.podgroups import install_pod_group_crd, pod_group, pod_group_status
from tests.sched.test_app import (
    CONFIG,
    SchedulerProcess,
    delete_nodes,
    delete_pods,
    list_objects,
    pod_scheduled,
    settled,
)

pytestmark = pytest.mark.integration

TAINT_KEY = "kubesalvo.io/test"
POOL_LABEL = "kubesalvo.io/test-pool"
GANGS = """\
profiles:
- schedulerName: kubesalvo
  plugins:
    queueSort:
      enabled: [{{name: GroupPriority}}]
      disabled: [{{name: "*"}}]
    multiPoint:
      enabled: [{{name: Coscheduling}}]
  pluginConfig:
  - {{name: Coscheduling, args: {{permitWaitingTimeSeconds: {timeout}}}}}
"""


class Pool:
    """The test's nodes and pods: nodes only its pods select and tolerate."""

    def __init__(self, control_plane: Any, namespace: str) -> None:
        self.control_plane = control_plane
        self.namespace = namespace
        self.name = f"gang-{secrets.token_hex(3)}"
        self.nodes: list[dict[str, Any]] = []
        self.pods: list[dict[str, Any]] = []

    def add_nodes(self, count: int, cpu: str, pods: str = "110") -> None:
        made = []
        for _ in range(count):
            name = f"{self.name}-{len(self.nodes) + len(made)}"
            made.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": {"kubernetes.io/hostname": name, POOL_LABEL: self.name},
                        "annotations": {"kwok.x-k8s.io/node": "fake"},
                    },
                    "spec": {
                        "taints": [{"key": TAINT_KEY, "value": self.name, "effect": "NoSchedule"}]
                    },
                    "status": {
                        "capacity": {"cpu": cpu, "memory": "64Gi", "pods": pods},
                        "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": pods},
                    },
                }
            )
        self.control_plane.create(made)
        self.nodes.extend(made)

    def pod(
        self,
        name: str,
        labels: dict[str, str] | None = None,
        cpu: str | None = "1",
        guaranteed: bool = False,
    ) -> dict[str, Any]:
        resources: dict[str, Any] = {}
        if cpu is not None:
            resources["requests"] = {"cpu": cpu, "memory": "100Mi"}
            if guaranteed:
                resources["limits"] = {"cpu": cpu, "memory": "100Mi"}
        made = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.namespace, "labels": labels or {}},
            "spec": {
                "schedulerName": "kubesalvo",
                "nodeSelector": {POOL_LABEL: self.name},
                "tolerations": [{"key": TAINT_KEY, "operator": "Equal", "value": self.name}],
                "containers": [
                    {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}
                ],
            },
        }
        self.pods.append(made)
        return made

    def gang(self, group: str, count: int, minimum: int, start: int = 0) -> list[dict[str, Any]]:
        labels = {"podGroup": group, "minAvailable": str(minimum)}
        return [self.pod(f"{group}-{i}", labels) for i in range(start, start + count)]

    def listed(self) -> dict[str, dict[str, Any]]:
        pods = list_objects(self.control_plane, f"/api/v1/namespaces/{self.namespace}/pods")
        return {p["metadata"]["name"]: p for p in pods}

    def bound(self, prefix: str = "") -> list[str]:
        return sorted(
            name
            for name, p in self.listed().items()
            if name.startswith(prefix) and p["spec"].get("nodeName")
        )

    def events(self, reason: str) -> list[dict[str, Any]]:
        path = f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events"
        return [e for e in list_objects(self.control_plane, path) if e.get("reason") == reason]

    def delete(self, pods: list[dict[str, Any]] | None = None) -> None:
        delete_pods(self.control_plane, pods if pods is not None else self.pods)

    def cleanup(self) -> None:
        self.delete()
        delete_nodes(self.control_plane, self.nodes)


@pytest.fixture
def pool(control_plane, namespace) -> Iterator[Pool]:
    made = Pool(control_plane, namespace)
    try:
        yield made
    finally:
        made.cleanup()


def start(tmp_path: Path, control_plane: Any, timeout: int = 60) -> SchedulerProcess:
    config = CONFIG.format(max_burst=1000) + GANGS.format(timeout=timeout)
    process = SchedulerProcess(tmp_path, control_plane.kubeconfig, config, "gangs")
    process.wait_ready()
    return process


def reported(pool: Pool, names: list[str]) -> bool:
    """Whether each named pod is bound or carries PodScheduled=False."""
    listed = pool.listed()
    return all(
        name in listed
        and (
            listed[name]["spec"].get("nodeName")
            or (pod_scheduled(listed[name]) or {}).get("status") == "False"
        )
        for name in names
    )


def message(pool: Pool, name: str) -> str:
    return str((pod_scheduled(pool.listed()[name]) or {}).get("message", ""))


def wait_for(what: Any, timeout: float, process: SchedulerProcess) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, process.tail()
        time.sleep(0.5)


def timed_out(pool: Pool) -> bool:
    """Whether a FailedScheduling event says a gang timed out waiting for members."""
    return any(
        "timed out waiting for minAvailable" in e.get("note", "")
        for e in pool.events("FailedScheduling")
    )


def names(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


def test_a_gang_of_8_that_fits_is_bound_whole(control_plane, pool, tmp_path):
    pool.add_nodes(2, cpu="4")  # room for 8 pods of 1 cpu
    process = start(tmp_path, control_plane)
    try:
        whole = pool.gang("whole", 8, 8)
        control_plane.create(whole)
        settled(process, 120, lambda: reported(pool, names(whole)))
        assert pool.bound("whole-") == names(whole)
    finally:
        process.kill()


def test_a_malformed_min_available_is_reported_and_the_rest_of_the_burst_bound(
    control_plane, pool, tmp_path
):
    pool.add_nodes(1, cpu="4")
    process = start(tmp_path, control_plane)
    try:
        bad = pool.pod("bad-0", {"podGroup": "bad", "minAvailable": "many"})
        others = [pool.pod(f"solo-{i}") for i in range(3)]
        control_plane.create([bad, *others])
        settled(process, 60, lambda: reported(pool, names([bad, *others])))
        assert pool.bound() == names(others)
        text = message(pool, "bad-0")
        assert "label minAvailable='many' is not a positive integer" in text, text
    finally:
        process.kill()


def test_a_gang_of_8_with_room_for_7_binds_none(control_plane, pool, tmp_path):
    pool.add_nodes(1, cpu="7")  # room for 7 of the 8
    process = start(tmp_path, control_plane)
    try:
        short = pool.gang("short", 8, 8)
        control_plane.create(short)
        settled(process, 120, lambda: reported(pool, names(short)))
        time.sleep(3)  # retries come and go: still nothing may be bound
        assert pool.bound("short-") == []
        # The 7 that fitted were taken back with the gang's reason, the 8th says why it
        # fits nowhere.
        texts = [message(pool, name) for name in names(short)]
        gang_texts = [t for t in texts if "pod group could not reach its minAvailable" in t]
        assert len(gang_texts) == 7, texts
        assert all(f"{pool.namespace}/short: 7 of 8 placed" in t for t in gang_texts), texts
    finally:
        process.kill()


def test_a_gang_short_of_members_times_out_backs_off_and_is_bound_once_complete(
    control_plane, pool, tmp_path
):
    pool.add_nodes(2, cpu="4")
    process = start(tmp_path, control_plane, timeout=3)
    try:
        seven = pool.gang("late", 7, 8)
        control_plane.create(seven)
        settled(process, 60, lambda: reported(pool, names(seven)))
        text = message(pool, "late-0")
        assert "pod group has less than minAvailable members" in text, text
        assert "7 of 8 exist" in text, text
        # Past the timeout the gang is rejected with an event of its own, then backs off.
        wait_for(lambda: timed_out(pool), 60, process)
        assert pool.bound("late-") == []
        # explain shows the gang's state in its answer
        answer = process.debug(f"/debug/explain?pod={pool.namespace}/late-0")
        state = answer["gang"]
        assert state["group"] == f"{pool.namespace}/late"
        assert (state["minAvailable"], state["minimumFrom"]) == (8, "label")
        assert (state["members"], state["pending"], state["bound"]) == (7, 7, 0)
        assert f"gang {pool.namespace}/late: minAvailable 8" in render(answer)
        eighth = pool.gang("late", 1, 8, start=7)
        control_plane.create(eighth)
        everyone = names(seven + eighth)
        settled(process, 120, lambda: pool.bound("late-") == everyone)
    finally:
        process.kill()


def test_a_jobs_pods_created_over_time_are_assembled_into_their_gang(control_plane, pool, tmp_path):
    """The Job controller creates its pods in growing batches (1, 2, 4, ...): the first
    members wait, and the later ones bring them into the burst that places the gang."""
    pool.add_nodes(2, cpu="4")
    process = start(tmp_path, control_plane)
    try:
        template = pool.pod("unused", {"podGroup": "job", "minAvailable": "8"})
        pool.pods.remove(template)
        template["spec"]["restartPolicy"] = "Never"
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "trainer", "namespace": pool.namespace},
            "spec": {
                "parallelism": 8,
                "completions": 8,
                "template": {
                    "metadata": {"labels": template["metadata"]["labels"]},
                    "spec": template["spec"],
                },
            },
        }
        control_plane.create([job])

        def all_bound() -> bool:
            listed = pool.listed()
            return len(listed) == 8 and all(p["spec"].get("nodeName") for p in listed.values())

        settled(process, 120, all_bound)
    finally:
        process.kill()

        async def remove(client: Any) -> None:
            await client.request(
                "DELETE",
                f"/apis/batch/v1/namespaces/{pool.namespace}/jobs/trainer",
                {"propagationPolicy": "Background"},
            )

        control_plane.call(remove)


def test_members_bound_before_a_restart_count_towards_the_minimum(control_plane, pool, tmp_path):
    """A gang of 4 is bound; the scheduler goes away, one member is replaced: the new
    scheduler binds the replacement alone, as the 3 bound members count towards 4."""
    pool.add_nodes(1, cpu="8")
    process = start(tmp_path, control_plane)
    try:
        four = pool.gang("kept", 4, 4)
        control_plane.create(four)
        settled(process, 120, lambda: pool.bound("kept-") == names(four))
    finally:
        process.kill()
    pool.delete(four[:1])
    wait_for(lambda: "kept-0" not in pool.listed(), 60, process)
    replacement = pool.gang("kept", 1, 4, start=4)
    control_plane.create(replacement)
    process = start(tmp_path, control_plane)
    try:
        expected = names(four[1:] + replacement)
        settled(process, 120, lambda: pool.bound("kept-") == expected)
    finally:
        process.kill()


def test_two_gangs_competing_for_the_same_room_are_never_both_half_placed(
    control_plane, pool, tmp_path
):
    pool.add_nodes(2, cpu="4")  # room for 8: one gang of 6, not two
    process = start(tmp_path, control_plane)
    try:
        first, second = pool.gang("red", 6, 6), pool.gang("blue", 6, 6)
        control_plane.create(first + second)
        settled(process, 120, lambda: reported(pool, names(first + second)))
        for _ in range(3):  # retries do not change it
            red, blue = len(pool.bound("red-")), len(pool.bound("blue-"))
            assert sorted((red, blue)) == [0, 6], (red, blue)
            time.sleep(1.0)
        winner, loser = (first, second) if red == 6 else (second, first)
        # Members that fit were taken back with the gang's reason; the others say why
        # they fit nowhere (kube-scheduler's text).
        texts = [message(pool, name) for name in names(loser)]
        assert any("pod group could not reach its minAvailable" in t for t in texts), texts
        assert any("Insufficient cpu" in t for t in texts), texts
        pool.delete(winner)
        prefix = loser[0]["metadata"]["name"].split("-")[0] + "-"
        settled(process, 120, lambda: pool.bound(prefix) == names(loser))
    finally:
        process.kill()


def test_group_priority_then_qos_class_decide_who_gets_the_room(control_plane, pool, tmp_path):
    pool.add_nodes(1, cpu="64", pods="10")  # room for 10 pods of the 30
    made: dict[str, tuple[str, str]] = {}
    # (groupPriority label, QoS class, how many); "urgent" is no integer: it counts as 0.
    plan = [
        ("2", "G", 3), ("2", "B", 3), ("2", "BE", 2),
        ("1", "G", 2), ("1", "B", 3), ("1", "BE", 2),
        ("0", "G", 3), ("0", "B", 3), ("0", "BE", 3),
        ("urgent", "G", 2), ("urgent", "B", 2), ("urgent", "BE", 2),
    ]  # fmt: skip
    pods = []
    # Created in the reverse of the expected order, before the scheduler starts: all 30
    # are in its first burst, and queue time would favour the wrong ones.
    for priority, qos, count in reversed(plan):
        for i in range(count):
            name = f"p{priority}-{qos.lower()}-{i}"
            labels = {"groupPriority": priority}
            if qos == "BE":
                pods.append(pool.pod(name, labels, cpu=None))
            else:
                pods.append(pool.pod(name, labels, cpu="100m", guaranteed=qos == "G"))
            made[name] = (priority, qos)
            control_plane.create(pods[-1:])
    assert len(pods) == 30
    process = start(tmp_path, control_plane)
    try:
        settled(process, 120, lambda: reported(pool, list(made)))
        bound = pool.bound()
        expected = sorted(n for n, (p, q) in made.items() if p == "2" or (p == "1" and q == "G"))
        assert bound == expected
        listed = pool.listed()
        assert listed["p1-g-0"]["status"]["qosClass"] == "Guaranteed"
        assert listed["p1-b-0"]["status"]["qosClass"] == "Burstable"
        assert listed["p1-be-0"]["status"]["qosClass"] == "BestEffort"
        warned = [
            e["regarding"]["name"]
            for e in pool.events("InvalidGroupPriority")
            if e.get("type") == "Warning"
        ]
        invalid = sorted(n for n, (p, _) in made.items() if p == "urgent")
        assert sorted(warned) == invalid  # one event per such pod
        assert "'urgent' is not an integer" in pool.events("InvalidGroupPriority")[0]["note"]
    finally:
        process.kill()


def test_a_pod_group_object_sets_the_minimum_and_timeout_and_gets_its_status(
    control_plane, pool, tmp_path
):
    install_pod_group_crd(control_plane)
    pool.add_nodes(2, cpu="4")
    # minResources as int-or-string quantities, as the CRD allows
    spec = {
        "minMember": 4,
        "scheduleTimeoutSeconds": 2,
        "minResources": {"cpu": 4, "memory": "400Mi"},
    }
    control_plane.create([pod_group(pool.namespace, "trainer", **spec)])

    def status() -> dict[str, Any]:
        return pod_group_status(control_plane, pool.namespace, "trainer")

    # The args' timeout is long: the PodGroup's 2 seconds win.
    process = start(tmp_path, control_plane, timeout=600)
    try:
        label = {"scheduling.x-k8s.io/pod-group": "trainer"}
        three = [pool.pod(f"trainer-{i}", label) for i in range(3)]
        control_plane.create(three)
        settled(process, 60, lambda: reported(pool, names(three)))
        assert "3 of 4 exist" in message(pool, "trainer-0")
        wait_for(lambda: timed_out(pool), 60, process)
        wait_for(lambda: status().get("phase") == "Pending", 30, process)
        assert pool.bound("trainer-") == []
        fourth = [pool.pod("trainer-3", label)]
        control_plane.create(fourth)
        settled(process, 120, lambda: pool.bound("trainer-") == names(three + fourth))
        wait_for(
            lambda: (
                status().get("scheduled") == 4 and status().get("phase") in ("Scheduled", "Running")
            ),
            30,
            process,
        )
        assert status().get("scheduleStartTime")
        # a gang whose minResources exceed the free room of all the nodes together (other
        # tests' nodes included: a million cores) waits
        control_plane.create(
            [pod_group(pool.namespace, "huge", minMember=1, minResources={"cpu": "1M"})]
        )
        huge = [pool.pod("huge-0", {"scheduling.x-k8s.io/pod-group": "huge"})]
        control_plane.create(huge)
        # (it may first wait for the PodGroup, if the pod is seen before it)
        wanted = "minResources exceed the free room of the cluster (cpu)"
        wait_for(lambda: wanted in message(pool, "huge-0"), 60, process)
        assert pool.bound("huge-") == []
    finally:
        process.kill()
