"""GangBook: members counted from the watch, waiting and timeouts, PodGroups and their
status (fake clocks; the runtime around it is tested in test_run_gangs.py)."""

from __future__ import annotations

from kubesalvo.core.plugins.coscheduling import CoschedulingArgs
from kubesalvo.core.plugins.coscheduling.gang import GroupKey
from kubesalvo.sched.gangs import GangBook, GangCollector
from kubesalvo.sched.informers import to_api_dict
from tests.helpers.queue import make_pod, make_queue

G = GroupKey("default", "g")
ARGS = CoschedulingArgs(permit_waiting_time_seconds=10)


def members(count: int, minimum: int = 4, start: int = 0) -> list:
    labels = {"podGroup": "g", "minAvailable": str(minimum)}
    return [make_pod(f"g{i}", labels=labels) for i in range(start, start + count)]


def setup(assumed: frozenset[str] = frozenset()):
    q, clock = make_queue()
    book = GangBook(q, is_assumed=lambda key: key in assumed, clock=clock.now)
    return q, clock, book


def popped(q, book, pods):
    for pod in pods:
        q.add(pod)
        book.pod_changed(f"uid-{pod.metadata.name}", pod)
    burst = q.pop_burst(100)
    return burst, [to_api_dict(qp.pod) for qp in burst]


def test_fewer_members_than_the_minimum_wait_then_time_out_and_restart_waiting() -> None:
    q, clock, book = setup()
    burst, objects = popped(q, book, members(3))
    answer = book.admit(burst, objects, ARGS)
    assert sorted(answer.refused) == [0, 1, 2] and not answer.needed
    assert "3 of 4 exist" in answer.refused[0]
    assert book.expired() == []
    clock.step(11)
    ((group, keys),) = book.expired()
    assert group == G and sorted(keys) == ["uid-g0", "uid-g1", "uid-g2"]
    answer = book.admit(burst, objects, ARGS)
    assert answer.timed_out == {G}
    assert "timed out waiting for minAvailable" in answer.refused[0]
    assert book.expired() == []  # rejected: the next wait starts afresh
    assert book.waiting(G) is None


def test_a_complete_gang_is_admitted_with_its_bound_members_counted() -> None:
    q, _, book = setup(assumed=frozenset({"uid-g2"}))
    bound = members(2)
    for pod in bound:
        pod.spec.node_name = "node-a"
        book.pod_changed(f"uid-{pod.metadata.name}", pod)
    in_flight = members(1, start=2)[0]  # assumed by us: its bind is in flight
    book.pod_changed("uid-g2", in_flight)
    burst, objects = popped(q, book, members(1, start=3))
    answer = book.admit(burst, objects, ARGS)
    assert answer.refused == {} and answer.needed == {G: 1}
    assert book.bound(G) == 3


def test_deleted_and_relabelled_members_are_forgotten() -> None:
    q, _clock, book = setup()
    pods = members(3)
    burst, objects = popped(q, book, pods)
    book.admit(burst, objects, ARGS)
    assert book.waiting(G) is not None
    for pod in pods:
        book.pod_changed(f"uid-{pod.metadata.name}", None)
    assert G not in book.members and book.waiting(G) is None
    moved = make_pod("g9", labels={"podGroup": "g"})
    book.pod_changed("uid-g9", moved)
    book.pod_changed("uid-g9", make_pod("g9", labels={"app": "web"}))
    assert book.members == {}


def test_a_gang_without_a_declared_minimum_is_left_to_the_kernel() -> None:
    q, _, book = setup()
    burst, objects = popped(q, book, [make_pod("g0", labels={"podGroup": "g"})])
    answer = book.admit(burst, objects, ARGS)
    assert answer.refused == {} and answer.needed == {}


def pod_group(min_member: int, timeout: int | None = None, status: dict | None = None) -> dict:
    spec: dict = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {"metadata": {"name": "g", "namespace": "default"}, "spec": spec, "status": status or {}}


def test_a_pod_group_gives_minimum_and_timeout_and_gets_its_status() -> None:
    q, clock, book = setup()
    book.pod_group_changed(pod_group(3, timeout=2), "default", "g")
    burst, objects = popped(q, book, members(2, minimum=10))  # the PodGroup's 3 wins
    answer = book.admit(burst, objects, ARGS)
    assert "2 of 3 exist" in answer.refused[0]
    assert book.status_patches() == [(G, {"phase": "Pending", "scheduled": 0, "running": 0})]
    assert book.status_patches() == []  # clean until something changes
    clock.step(2)  # the PodGroup's 2 seconds, not the args' 10
    assert [g for g, _ in book.expired()] == [G]
    q.done("uid-g0")
    q.done("uid-g1")
    pods = members(3, minimum=10)
    for pod in pods:
        pod.spec.node_name = "node-a"
        book.pod_changed(f"uid-{pod.metadata.name}", pod)
    book._start(G)
    ((_group, status),) = book.status_patches()
    assert status["phase"] == "Scheduled" and status["scheduled"] == 3
    assert status["scheduleStartTime"].endswith("Z")
    # the object shows what was written: nothing more to write
    book.pod_group_changed(pod_group(3, timeout=2, status=status), "default", "g")
    assert book.status_patches() == []
    pods[0].status.phase = "Running"
    book.pod_changed("uid-g0", pods[0])
    assert book.status_patches()[0][1]["running"] == 1


def test_a_pod_group_with_min_resources_waits_for_free_room() -> None:
    q, _, book = setup()
    obj = pod_group(1)
    obj["spec"]["minResources"] = {"cpu": "8"}
    book.pod_group_changed(obj, "default", "g")
    burst, objects = popped(q, book, members(1, minimum=1))
    answer = book.admit(burst, objects, ARGS, lambda: {"cpu": 4000})
    assert "minResources exceed the free room of the cluster (cpu)" in answer.refused[0]
    answer = book.admit(burst, objects, ARGS, lambda: {"cpu": 9000})
    assert answer.needed == {G: 1}


def test_pod_group_backoff_holds_a_rejected_gang_back() -> None:
    q, clock, book = setup()
    args = CoschedulingArgs(permit_waiting_time_seconds=1, pod_group_backoff_seconds=30)
    burst, objects = popped(q, book, members(3))
    book.admit(burst, objects, args)
    clock.step(2)
    assert book.admit(burst, objects, args).timed_out == {G}
    late = members(1, start=3)[0]
    book.pod_changed("uid-g3", late)
    q.add(late)
    answer = book.admit(burst, objects, args)  # complete now, but still backing off
    assert "backing off" in answer.refused[0]
    clock.step(30)
    assert book.admit(burst, objects, args).needed == {G: 4}


def test_a_malformed_min_available_refuses_its_gang_not_the_burst() -> None:
    q, _, book = setup()
    bad = make_pod("g0", labels={"podGroup": "g", "minAvailable": "many"})
    fine = make_pod("solo")
    burst, objects = popped(q, book, [bad, make_pod("g1", labels={"podGroup": "g"}), fine])
    answer = book.admit(burst, objects, ARGS)
    assert sorted(answer.refused) == [0, 1]
    assert answer.refused[0] == (
        "pod group default/g: label minAvailable='many' is not a positive integer (pod g0)"
    )


def test_with_pod_groups_watched_a_member_waits_for_its_pod_group() -> None:
    q, _, book = setup()
    book.watching_pod_groups = True
    member = make_pod("g0", labels={"scheduling.x-k8s.io/pod-group": "g"})
    burst, objects = popped(q, book, [member])
    answer = book.admit(burst, objects, ARGS)
    assert answer.refused == {0: "PodGroup default/g not found (waiting for it)"}
    q.add_unschedulable(burst[0], ["Coscheduling"])
    book.pod_group_changed(pod_group(1), "default", "g")  # it appears: the member wakes
    burst = q.pop_burst(10)
    assert [qp.key for qp in burst] == ["uid-g0"]
    assert book.admit(burst, objects, ARGS).needed == {G: 1}
    # the seeds' labels never wait for a PodGroup
    seed = make_pod("s0", labels={"podGroup": "s"})
    burst, objects = popped(q, book, [seed])
    assert book.admit(burst, objects, ARGS).refused == {}


def test_the_collector_shows_waiting_gangs_their_pods_and_the_verdicts() -> None:
    q, clock, book = setup()
    burst, objects = popped(q, book, members(3))
    book.admit(burst, objects, ARGS)  # 3 of 4: waits
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in GangCollector(book).collect()
        for s in family.samples
    }
    assert samples[("kubesalvo_gangs_waiting", ())] == 1
    assert samples[("kubesalvo_gang_pods", (("state", "pending"),))] == 3
    assert samples[("kubesalvo_gang_pods", (("state", "bound"),))] == 0
    assert samples[("kubesalvo_gang_verdicts_total", (("verdict", "wait"),))] == 1
    clock.step(11)
    book.admit(burst, objects, ARGS)
    timed_out = [
        s.value
        for family in GangCollector(book).collect()
        for s in family.samples
        if s.labels.get("verdict") == "timed_out"
    ]
    assert timed_out == [1]
