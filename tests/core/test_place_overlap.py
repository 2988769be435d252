"""The next chunk encoded on a worker thread while the kernel runs one (core/place.py's
_run_chunks), the outcome of each chunk given and the classes done assumed while later
chunks run, places and assumes exactly what the serial order does (every chunk run in
turn, the whole burst assumed at the end)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from kubesalvo.core import place
from kubesalvo.core.place import place_burst
from kubesalvo.core.synthetic.nodes import make_nodes
from kubesalvo.core.synthetic.workloads import make_pods
from tests.helpers.reference import state_of


def bound_to(pods, nodes):
    """The pods, each bound to a node in turn (the running load)."""
    names = [n["metadata"]["name"] for n in nodes]
    return [
        {**pod, "spec": {**pod["spec"], "nodeName": names[(i * 7) % len(names)]}}
        for i, pod in enumerate(pods)
    ]


def outcome(result, state):
    """Everything a burst gives back and leaves in the state."""
    groups = [(g.namespace, g.labels, g.terminating, g.per_row, g.refs) for g in state.groups]
    return (
        result.nodes,
        result.rows.tolist(),
        result.scores.tolist(),
        result.reason_counts,
        result.rejectors,
        result.prefilter_rejector,
        result.messages,
        result.errors,
        result.rolled_back.tolist(),
        result.tentative,
        list(state.pods.items()),
        groups,
        state.requested[: state.rows].tolist(),
        state.nonzero_requested[: state.rows].tolist(),
        [dict(ports) for ports in state.ports[: state.rows]],
        np.asarray(state.affinity_pods_on_row[: state.rows]).tolist(),
    )


def encoding_threads(monkeypatch):
    """The names of the threads that encode chunks (of 16 classes), as they do."""
    threads: list[str] = []
    chunk_operands = place._chunk_operands

    def recorded(*args):
        threads.append(threading.current_thread().name)
        return chunk_operands(*args)

    monkeypatch.setattr(place, "_chunk_operands", recorded)
    monkeypatch.setattr(place, "_CHUNK_CELLS", 1)  # chunks of 16 classes
    return threads


def place_both_ways(monkeypatch, nodes, running, burst):
    """The outcome with the overlap and without, and the threads that encoded chunks."""
    threads = encoding_threads(monkeypatch)
    monkeypatch.setattr(place, "_cpus", lambda: 2)  # as on a machine with two CPUs or more
    outcomes = []
    for overlap in (False, True):
        monkeypatch.setattr(place, "_OVERLAP", overlap)
        state = state_of(nodes, running)
        outcomes.append(outcome(place_burst(state, burst), state))
    return outcomes[0], outcomes[1], threads


@pytest.mark.parametrize("shape", ["mixed", "distinct", "replicasets", "gangs"])
def test_overlapped_chunks_place_and_assume_what_serial_chunks_do(shape, monkeypatch):
    nodes = make_nodes(40, seed=3)
    running = bound_to(make_pods(60, seed=4, shape="mixed", prefix="run-"), nodes)
    burst = make_pods(400, seed=5, shape=shape, classes=40)  # classes: of replicasets
    serial, overlapped, threads = place_both_ways(monkeypatch, nodes, running, burst)
    assert overlapped == serial
    assert any(name == threading.current_thread().name for name in threads)  # serial
    assert any(name.startswith("kubesalvo-encode") for name in threads)  # overlapped
    assert sum(serial[1][i] >= 0 for i in range(len(burst))) > 0


def test_pods_counted_already_move_the_same_way_overlapped(monkeypatch):
    """A burst with pods the state counts already (a retried burst) is assumed per pod
    (resources moved per record), in two parts around the last chunk."""
    nodes = make_nodes(30, seed=6)
    burst = make_pods(120, seed=7, shape="distinct")
    running = bound_to(burst[::3], nodes)
    serial, overlapped, threads = place_both_ways(monkeypatch, nodes, running, burst)
    assert overlapped == serial
    assert len(set(threads)) == 2


def test_with_one_cpu_the_chunks_run_in_turn_on_the_calling_thread(monkeypatch):
    threads = encoding_threads(monkeypatch)
    monkeypatch.setattr(place, "_cpus", lambda: 1)
    nodes = make_nodes(20, seed=8)
    result = place_burst(state_of(nodes), make_pods(80, seed=9, shape="distinct"))
    assert result.placed > 0 and len(threads) > 1
    assert set(threads) == {threading.current_thread().name}


def test_every_chunk_reads_its_own_pods_nominated_nodes(monkeypatch):
    """Nominated rows are looked up chunk by chunk: each pod of a burst cut into many
    chunks takes the node its preemption nominated."""
    encoding_threads(monkeypatch)
    nodes = [
        {
            "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}},
        }
        for i in range(40)
    ]
    burst = [
        {
            "metadata": {"name": f"p{i}", "namespace": "ns", "labels": {"app": f"a{i}"}},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{i + 1}m"}}}]
            },
            "status": {"nominatedNodeName": f"n{(i * 7) % 40}"},
        }
        for i in range(100)
    ]
    result = place_burst(state_of(nodes), burst)
    assert result.nodes == [f"n{(i * 7) % 40}" for i in range(100)]


def test_later_chunks_count_the_done_classes_once_while_they_are_assumed(monkeypatch):
    """Classes that share labels (one app, each pod its own requests) spread over the
    same counters: with the overlap, the classes done are assumed in the state while
    later chunks are encoded, and those chunks still count each of their pods once."""
    zone = "topology.kubernetes.io/zone"
    nodes = [
        {
            "metadata": {
                "name": f"n{i}",
                "labels": {"kubernetes.io/hostname": f"n{i}", zone: f"z{i % 3}"},
            },
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}},
        }
        for i in range(30)
    ]
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
        for key in ("kubernetes.io/hostname", zone)
    ]

    def web(name, millicpu):
        container = {"name": "c", "resources": {"requests": {"cpu": f"{millicpu}m"}}}
        return {
            "metadata": {"name": name, "namespace": "ns", "labels": {"app": "web"}},
            "spec": {"containers": [container], "topologySpreadConstraints": spread},
        }

    running = bound_to([web(f"r{i}", 50) for i in range(20)], nodes[:7])
    burst = [web(f"p{i}", 100 + 7 * i) for i in range(200)]
    serial, overlapped, threads = place_both_ways(monkeypatch, nodes, running, burst)
    assert overlapped == serial
    assert len(set(threads)) == 2


def test_a_pod_that_cannot_be_encoded_fails_the_burst_before_any_is_assumed(monkeypatch):
    """The last chunk's pod has tolerations that are no objects: encoding it fails the
    burst, overlapped or not, and the state records none of the burst's pods."""
    nodes = make_nodes(20, seed=10)
    burst = make_pods(120, seed=11, shape="distinct")
    burst[-1] = {**burst[-1], "spec": {**burst[-1]["spec"], "tolerations": ["not an object"]}}
    encoding_threads(monkeypatch)
    for overlap in (False, True):
        monkeypatch.setattr(place, "_OVERLAP", overlap)
        monkeypatch.setattr(place, "_cpus", lambda: 2)
        state = state_of(nodes)
        requested = state.requested.copy()
        with pytest.raises(AttributeError):
            place_burst(state, burst)
        assert not state.pods and not any(group.per_row for group in state.groups)
        assert (state.requested == requested).all()


@pytest.mark.parametrize("shared_from", [0, 1, 5, 6])
def test_a_burst_that_stops_overlapping_midway_places_and_assumes_the_same(
    shared_from, monkeypatch
):
    """On a busy machine the kernel and the worker take turns on one CPU: from the chunk
    where the kernel is seen waiting on, the rest runs in turn (7 chunks here; from 5
    on, the state has recorded the classes done beside chunk 5)."""
    nodes = make_nodes(30, seed=12)
    running = bound_to(make_pods(40, seed=13, shape="mixed", prefix="run-"), nodes)
    burst = make_pods(100, seed=14, shape="distinct")
    serial = place_both_ways(monkeypatch, nodes, running, burst)[0]
    calls: list[int] = []

    def sharing(cpu, wall):
        calls.append(len(calls))
        return len(calls) > shared_from

    monkeypatch.setattr(place, "_sharing_a_cpu", sharing)
    threads = encoding_threads(monkeypatch)
    state = state_of(nodes, running)
    result = place_burst(state, burst)
    assert outcome(result, state) == serial
    assert len(threads) == 7
    assert threads.count(threading.current_thread().name) == 1 + max(0, 5 - shared_from)
