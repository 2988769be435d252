"""The scheduler cache: assumed placements are confirmed, moved, forgotten or expired, bound
pods from the watch are counted once whatever order events come in, and nothing changes
under a burst that is running."""

from __future__ import annotations

import itertools
from typing import Any

import msgspec

from kubesalvo.core.place import place_burst
from kubesalvo.core.state import POD_COLUMN, pod_key
from kubesalvo.sched.cache import SchedulerCache, same_for_state, struct_key
from kubesalvo.sched.informers.forms import PodForms
from kubesalvo.sched.informers.models import Pod, to_api_dict
from kubesalvo.sched.queue import FakeClock


def node(name: str, cpu: str = "4") -> dict:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str, node_name: str | None = None, cpu: str = "1", phase: str = "") -> dict:
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    out = {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": spec}
    if phase:
        out["status"] = {"phase": phase}
    return out


def cpu_used(cache: SchedulerCache, name: str) -> int:
    state = cache.state
    return int(state.requested[state.row_of[name], 0])


def pods_on(cache: SchedulerCache, name: str) -> int:
    state = cache.state
    return int(state.requested[state.row_of[name], POD_COLUMN])


def assume(cache: SchedulerCache, p: dict) -> str:
    """Place one pod with the real kernel, as the cycle does, and record the assumption."""
    with cache.frozen() as state:
        result = place_burst(state, [p])
    placed = result.nodes[0]
    assert placed is not None
    cache.assumed(p["metadata"]["uid"], placed)
    return placed


def test_a_confirmed_assumed_pod_is_counted_once_as_bound():
    cache = SchedulerCache()
    cache.add_node(node("a"))
    p = pod("web")
    placed = assume(cache, p)
    assert cache.state.pods["uid-web"].assumed
    cache.finish_binding("uid-web")
    cache.bound_pod(pod("web", placed))
    assert not cache.is_assumed("uid-web")
    assert not cache.state.pods["uid-web"].assumed
    assert cpu_used(cache, "a") == 1000
    assert pods_on(cache, "a") == 1


def test_confirming_our_own_binding_needs_no_api_dict_and_a_move_asks_for_one():
    cache = SchedulerCache()
    cache.add_node(node("a"))
    cache.add_node(node("b"))
    placed = assume(cache, pod("web"))
    cache.finish_binding("uid-web")

    def unneeded() -> dict:
        raise AssertionError("a confirmation converted the pod")

    cache.bound("uid-web", placed, False, unneeded)
    assert not cache.state.pods["uid-web"].assumed
    other = "b" if placed == "a" else "a"
    asked = []
    cache.bound("uid-web", other, False, lambda: asked.append(1) or pod("web", other))
    assert asked == [1]
    assert (pods_on(cache, other), pods_on(cache, placed)) == (1, 0)
    cache.bound("uid-web", other, True, unneeded)  # finished: it holds nothing
    assert pods_on(cache, other) == 0


def test_a_pod_the_watch_shows_on_another_node_moves_there():
    cache = SchedulerCache()
    cache.add_node(node("a"))
    cache.add_node(node("b"))
    placed = assume(cache, pod("web"))
    other = "b" if placed == "a" else "a"
    cache.bound_pod(pod("web", other))
    assert cpu_used(cache, placed) == 0
    assert cpu_used(cache, other) == 1000


def test_a_forgotten_assumption_frees_the_node():
    cache = SchedulerCache()
    cache.add_node(node("a"))
    assume(cache, pod("web"))
    cache.forget("uid-web")
    assert cpu_used(cache, "a") == 0
    assert "uid-web" not in cache.state.pods


def test_forgetting_a_pod_the_watch_already_confirmed_keeps_it():
    cache = SchedulerCache()
    cache.add_node(node("a"))
    placed = assume(cache, pod("web"))
    cache.bound_pod(pod("web", placed))
    cache.forget("uid-web")
    assert cpu_used(cache, "a") == 1000


def test_an_assumed_pod_never_confirmed_expires_after_its_bind_finished():
    clock = FakeClock()
    cache = SchedulerCache(assumed_ttl=30.0, clock=clock.now)
    cache.add_node(node("a"))
    assume(cache, pod("web"))
    clock.step(100.0)
    assert cache.expire() == 0  # the bind is still in flight: no deadline yet
    cache.finish_binding("uid-web")
    clock.step(29.0)
    assert cache.expire() == 0
    clock.step(2.0)
    assert cache.expire() == 1
    assert cpu_used(cache, "a") == 0
    assert not cache.is_assumed("uid-web")


def test_only_the_latest_deadline_of_an_unconfirmed_pod_expires_it_once():
    # Deadlines are kept earliest first: a confirmed pod's deadline passes without
    # effect, and a pod assumed again after its bind failed expires at its new deadline.
    clock = FakeClock()
    cache = SchedulerCache(assumed_ttl=30.0, clock=clock.now)
    cache.add_node(node("a"))
    placed = assume(cache, pod("confirmed"))
    cache.finish_binding("uid-confirmed")
    cache.bound_pod(pod("confirmed", placed))
    assume(cache, pod("retried"))
    cache.finish_binding("uid-retried")
    cache.forget("uid-retried")
    clock.step(10.0)
    assume(cache, pod("retried"))
    cache.finish_binding("uid-retried")
    clock.step(25.0)  # past the first deadlines (30 s), not the retried pod's second (40 s)
    assert cache.expire() == 0
    assert cache.is_assumed("uid-retried")
    clock.step(10.0)
    assert cache.expire() == 1
    assert not cache.is_assumed("uid-retried")
    assert cpu_used(cache, "a") == 1000  # the confirmed pod only
    assert cache.expire() == 0


def test_a_bound_pod_seen_again_is_not_counted_twice():
    cache = SchedulerCache()
    cache.add_node(node("a"))
    cache.bound_pod(pod("db", "a", cpu="2"))
    cache.bound_pod(pod("db", "a", cpu="2"))
    assert cpu_used(cache, "a") == 2000
    assert pods_on(cache, "a") == 1


def test_a_pod_bound_before_its_node_is_known_counts_when_the_node_arrives():
    cache = SchedulerCache()
    cache.bound_pod(pod("db", "late", cpu="2"))
    cache.add_node(node("late"))
    assert cpu_used(cache, "late") == 2000


def test_a_waiting_pod_deleted_before_its_node_arrives_is_never_counted():
    cache = SchedulerCache()
    cache.bound_pod(pod("db", "late", cpu="2"))
    cache.remove_pod(pod("db", "late"))
    cache.add_node(node("late"))
    assert cpu_used(cache, "late") == 0


def test_a_pod_assumed_on_a_node_that_goes_away_is_forgotten_there():
    cache = SchedulerCache()
    cache.add_node(node("a"))
    place_burst(cache.state, [pod("web", cpu="2")])
    cache.assumed("uid-web", "a")
    cache.remove_node("a")
    cache.forget("uid-web")  # the bind failed: the node is gone
    cache.add_node(node("a"))
    assert cpu_used(cache, "a") == 0 and not cache.is_assumed("uid-web")


def test_a_node_that_comes_back_counts_its_pods_once():
    cache = SchedulerCache()
    cache.add_node(node("a"))
    cache.bound_pod(pod("db", "a", cpu="2"))
    cache.remove_node("a")
    cache.bound_pod(pod("db", "a", cpu="2"))  # a resync of the pod while the node is away
    cache.add_node(node("a"))
    assert cpu_used(cache, "a") == 2000 and pods_on(cache, "a") == 1


def test_finished_and_deleted_pods_hold_nothing():
    cache = SchedulerCache()
    cache.add_node(node("a"))
    cache.bound_pod(pod("job", "a", cpu="2"))
    cache.bound_pod(pod("job", "a", cpu="2", phase="Succeeded"))
    assert cpu_used(cache, "a") == 0
    cache.bound_pod(pod("svc", "a", cpu="1"))
    cache.remove_pod(pod("svc", "a"))
    assert cpu_used(cache, "a") == 0 and pods_on(cache, "a") == 0


def test_changes_wait_while_a_burst_runs_and_apply_in_order_after():
    cache = SchedulerCache()
    cache.add_node(node("a"))
    with cache.frozen():
        cache.add_node(node("b"))
        cache.bound_pod(pod("db", "b", cpu="2"))
        cache.remove_pod(pod("db", "b"))
        cache.bound_pod(pod("db2", "b", cpu="3"))
        assert "b" not in cache.state.row_of
        assert cache.deferred == 4
    assert cache.deferred == 0
    assert cpu_used(cache, "b") == 3000


def test_a_burst_sees_what_earlier_placements_took():
    cache = SchedulerCache()
    cache.add_node(node("a", cpu="2"))
    assume(cache, pod("one", cpu="1500m"))
    with cache.frozen() as state:
        result = place_burst(state, [pod("two", cpu="1")])
    assert result.nodes == [None]
    assert result.messages[0] == "0/1 nodes are available: 1 Insufficient cpu."


def test_placements_a_failed_burst_never_recorded_are_dropped():
    cache = SchedulerCache()
    cache.add_node(node("a"))
    with cache.frozen() as state:
        place_burst(state, [pod("one"), pod("two")])
        cache.assumed("uid-one", "a")  # the burst failed before recording "two"
    cache.drop_unrecorded(["uid-one", "uid-two"])
    assert set(cache.state.pods) == {"uid-one"}
    assert cpu_used(cache, "a") == 1000


# --- updates of a bound pod that the state need not recount ---------------------------


def _bound(**changes: Any) -> dict:
    """A bound pod as the watch shows it, with ``changes`` applied (path "a.b" -> value)."""
    out: dict = {
        "metadata": {"name": "web", "namespace": "ns", "uid": "uid-web", "labels": {"app": "a"}},
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"phase": "Pending"},
    }
    for path, value in changes.items():
        *parents, last = path.split(".")
        target = out
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value
    return out


_RUNNING = {
    "status.phase": "Running",
    "status.startTime": "2026-11-25T10:00:00Z",
    "status.conditions": [{"type": "Ready", "status": "True"}],
    "metadata.resourceVersion": "7",
    "metadata.annotations": {"note": "x"},
    # As kwok reports a running container: no resources.
    "status.containerStatuses": [
        {"name": "c", "ready": True, "image": "x", "state": {"running": {}}, "restartCount": 0}
    ],
}
_VARIANTS: dict[str, dict[str, Any]] = {
    "pending": {},
    "running (a status report)": _RUNNING,
    "relabelled": {"metadata.labels": {"app": "b"}},
    "more cpu": {"spec.containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]},
    "host port": {
        "spec.containers": [
            {
                "name": "c",
                "resources": {"requests": {"cpu": "1"}},
                "ports": [{"containerPort": 80, "hostPort": 80}],
            }
        ]
    },
    "resized by the kubelet": {
        **_RUNNING,
        "status.containerStatuses": [
            {
                "name": "c",
                "resources": {"requests": {"cpu": "3"}},
                "allocatedResources": {"cpu": "3"},
            }
        ],
    },
    "resize infeasible": {
        **_RUNNING,
        "status.containerStatuses": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
        "status.conditions": [
            {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
        ],
    },
    "resize deferred": {
        **_RUNNING,
        "status.containerStatuses": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
        "status.conditions": [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}],
    },
    "terminating": {"metadata.deletionTimestamp": "2026-11-25T10:00:00Z"},
    "succeeded": {"status.phase": "Succeeded"},
    "other namespace": {"metadata.namespace": "other"},
}


def _counted(p: dict) -> tuple:
    """All a fresh state counts of ``p`` on its node."""
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    cache.bound_pod(p)
    state = cache.state
    record = state.pod_record("uid-web")
    if record is None:
        return (None, state.requested[0].tolist())
    group = state.groups[record.group]
    return (
        record.namespace,
        record.labels,
        record.requests,
        record.nonzero,
        record.ports,
        group.terminating,
        state.requested[0].tolist(),
    )


def test_an_update_that_keeps_what_the_state_counts_is_told_apart_from_one_that_does_not():
    # For every pair of versions: "same for the state" must mean that a state counting the
    # new version is the one counting the old; and a status report (kwok's Running) must be
    # found the same, or the runtime recounts every bound pod again.
    pods = {name: msgspec.convert(_bound(**changes), Pod) for name, changes in _VARIANTS.items()}
    counted = {name: _counted(_bound(**changes)) for name, changes in _VARIANTS.items()}
    same_pairs = set()
    for a, b in itertools.permutations(_VARIANTS, 2):
        if same_for_state(pods[a], pods[b]):
            same_pairs.add(frozenset((a, b)))
            assert counted[a] == counted[b], (a, b)
    assert same_pairs == {frozenset(("pending", "running (a status report)"))}


def test_a_status_report_of_a_bound_pod_is_skipped_and_a_relabel_counted():
    cache = SchedulerCache()
    cache.add_node(node("n1"))
    pending = msgspec.convert(_bound(**_VARIANTS["pending"]), Pod)
    cache.seen_bound(None, pending)
    record = cache.state.pod_record("uid-web")
    running = msgspec.convert(_bound(**_VARIANTS["running (a status report)"]), Pod)
    cache.seen_bound(pending, running)
    assert cache.state.pod_record("uid-web") is record  # not counted anew
    relabelled = msgspec.convert(_bound(**_VARIANTS["relabelled"]), Pod)
    cache.seen_bound(running, relabelled)
    assert cache.state.pod_record("uid-web").labels == (("app", "b"),)
    assert _counted(_bound(**_VARIANTS["relabelled"]))[-1] == cache.state.requested[0].tolist()


def test_a_pod_bound_elsewhere_is_counted_from_the_runtimes_dict_and_removed_by_key():
    # The cache asks the runtime's memo (sched/informers/forms.py) for the dict; a delete
    # needs none, only the key.
    forms = PodForms()
    cache = SchedulerCache(api=forms.api)
    cache.add_node(node("n1"))
    bound = msgspec.convert(pod("web", "n1", cpu="2"), Pod)
    cache.seen_bound(None, bound)
    assert forms.conversions == 1
    assert forms.api(bound) is forms.api(bound)  # the cache's dict, kept for the others
    assert forms.conversions == 1
    assert cpu_used(cache, "n1") == 2000
    cache.removed(struct_key(bound))
    assert cpu_used(cache, "n1") == 0 and pods_on(cache, "n1") == 0
    assert forms.conversions == 1


def test_the_key_of_an_informer_object_is_the_states_key_of_its_dict():
    with_uid = msgspec.convert(pod("web", "n1"), Pod)
    without = msgspec.convert({"metadata": {"name": "bare", "namespace": ""}}, Pod)
    for obj in (with_uid, without):
        assert struct_key(obj) == pod_key(to_api_dict(obj))
