"""The agent interface's helpers: per-row arrays that grow, the pod view shared by agents."""

from __future__ import annotations

import numpy as np

from kubesalvo.core.state import ClusterState
from kubesalvo.sched.extender.agent import Agent, PodInfo, RowArray, passes_all
from tests.helpers.extender import node, pod


def test_row_arrays_grow_keeping_their_rows_and_fill():
    array = RowArray(np.float64, (2,), fill=-1.0)
    array.ensure(3)[2] = (5.0, 6.0)
    grown = array.ensure(1000)
    assert len(grown) >= 1000
    assert tuple(grown[2]) == (5.0, 6.0) and tuple(grown[999]) == (-1.0, -1.0)
    array.reset(2)
    assert tuple(array.view(3)[2]) == (-1.0, -1.0)


def test_a_pod_view_from_an_api_dict_reads_requests_and_managed_resources():
    info = PodInfo.from_api(pod(cpu="250m", memory="1Gi", extra={"example.com/gpu": "2"}))
    assert info.requests["cpu"] == 250 and info.requests["memory"] == 1024**3
    assert info.requests_any(frozenset({"example.com/gpu"}))
    assert not info.requests_any(frozenset({"example.com/fpga"}))
    assert info.namespace == "default"


def test_the_base_agent_passes_every_row_and_scores_nothing():
    state = ClusterState()
    for name in ("a", "b"):
        state.add_node(node(name))
    agent = Agent(None)
    info = PodInfo.from_api(pod())
    assert not agent.filter(state, info).codes.any()
    assert len(passes_all(state).codes) == state.rows == 2
    assert agent.score(state, info) is None
