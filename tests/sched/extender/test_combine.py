"""Combining agents' answers: filter as a plain node-by-node loop would (down to the
bytes of its JSON), scores clipped."""

from __future__ import annotations

import msgspec
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kubesalvo.sched.extender import combine, wire
from kubesalvo.sched.extender.agent import Agent, Filtered, PodInfo
from kubesalvo.sched.extender.config import ConfiguredAgent
from kubesalvo.sched.extender.names import Listing
from tests.helpers.extender import pod


class Coded(Agent):
    """Fails each row with the code the test gives it."""

    name = "coded"

    def __init__(self, codes: list[int], unresolvable: frozenset[int]) -> None:
        super().__init__(None)
        self.codes = np.array(codes, dtype=np.uint8)
        self.unresolvable = unresolvable

    def filter(self, state, pod):
        return Filtered(self.codes, ("one", "two", "three"), self.unresolvable)


def plain_filter(agents, names, rows):
    """The obvious answer: node by node, the first failing agent's reason."""
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    passed = []
    for position, (name, row) in enumerate(zip(names, rows, strict=True)):
        if row < 0:
            unresolvable[name] = combine.UNKNOWN_NODE
            continue
        for entry in agents:
            code = int(entry.agent.codes[row])
            if code:
                text = f"{entry.name}: {entry.agent.filter(None, None).reason(code)}"
                target = unresolvable if code in entry.agent.unresolvable else failed
                target[name] = text
                break
        else:
            passed.append(position)
    return passed, failed, unresolvable


@given(
    st.lists(st.integers(0, 3), min_size=6, max_size=6),
    st.lists(st.integers(0, 3), min_size=6, max_size=6),
    st.lists(st.integers(-3, 5), max_size=30),
    st.frozensets(st.integers(1, 3)),
    st.booleans(),
)
def test_filter_answers_are_the_plain_loops_byte_for_byte(codes_a, codes_b, picks, hard, full):
    first, second = Coded(codes_a, hard), Coded(codes_b, frozenset({1}) - hard)
    agents = [ConfiguredAgent(first, 1, frozenset()), ConfiguredAgent(second, 1, frozenset())]
    # repeated names, unknown ones (-1) and names JSON must escape
    names = [f'n"{pick}\u00e9' if pick >= 0 else f"ghost{pick}\n" for pick in picks]
    rows = [max(pick, -1) for pick in picks]
    listing = Listing(names, np.array(rows, dtype=np.intp), 0)
    answer = combine.filter_nodes(agents, None, PodInfo.from_api(pod()), listing.rows)
    passed, failed, unresolvable = plain_filter(agents, names, rows)
    assert answer.passed.tolist() == passed
    result = wire.FilterResult()
    if full:
        result.Nodes = wire.NodeList([msgspec.Raw(b'{"n":%d}' % i) for i in passed])
    else:
        result.NodeNames = [names[i] for i in passed]
    expected = msgspec.structs.replace(
        result, FailedNodes=failed, FailedAndUnresolvableNodes=unresolvable
    )
    assert listing.filter_json(answer, result) == wire.encode(expected)  # encoded
    listing.reused = True
    assert listing.filter_json(answer, result) == wire.encode(expected)  # joined


class Scored(Agent):
    name = "scored"

    def __init__(self, scores: list[float]) -> None:
        super().__init__(None)
        self.scores = np.array(scores, dtype=np.float64)

    def score(self, state, pod):
        return self.scores


def test_scores_outside_0_to_1_are_clipped_and_nan_counts_as_0():
    raw = [np.nan, np.inf, -np.inf, -0.5, 1.5, 0.25, 0.0]
    agents = [ConfiguredAgent(Scored(raw), 1, frozenset())]
    rows = np.array([*range(len(raw)), -1], dtype=np.intp)
    scores = combine.prioritize(agents, None, PodInfo.from_api(pod()), rows)
    expected = np.rint(10 * np.clip(np.nan_to_num(np.array([*raw, 0.0])), 0, 1))
    assert scores.tolist() == expected.astype(int).tolist() == [0, 10, 0, 0, 10, 2, 0, 0]
