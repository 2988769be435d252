"""Fuzzing request bodies (hypothesis): the running server answers 200 or 400, never a
5xx, and keeps serving."""

from __future__ import annotations

import asyncio
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.sched.extender.service import Extender
from tests.helpers.extender import config, node, pod

VERBS = ["filter", "prioritize", "preempt", "bind", "example/filter", "policy/prioritize"]
RULES = [
    {
        "name": "r",
        "podSelector": {"matchLabels": {"team": "a"}},
        "requiredNodeSelector": {"matchLabels": {"pool": "a"}},
        "maxPodsPerNode": 2,
        "placement": "spread",
    }
]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """One extender on a loopback port, served by a thread's event loop for the module."""
    cfg = config(
        [
            {"name": "example"},
            {"name": "congestion"},
            {"name": "safe"},
            {"name": "policy", "args": {"rules": RULES}},
        ],
        maxRequestBytes=256 * 1024,
    )
    loop = asyncio.new_event_loop()
    extender = Extender(cfg, None, "127.0.0.1", 0)
    started = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(extender.start())
        started.set()
        loop.run_until_complete(extender.run())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert started.wait(30)
    try:
        yield extender.url
    finally:
        loop.call_soon_threadsafe(extender.stop)
        thread.join(30)


def send(url: str, verb: str, body: bytes) -> int:
    request = urllib.request.Request(f"{url}/{verb}", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            msgspec.json.decode(answer.read())
            return int(answer.status)
    except urllib.error.HTTPError as error:
        msgspec.json.decode(error.read())  # a JSON error body, whatever the status
        return int(error.code)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=30,
)

FIELDS = [
    "Pod",
    "Nodes",
    "NodeNames",
    "NodeNameToMetaVictims",
    "NodeNameToVictims",
    "PodName",
    "PodNamespace",
    "PodUID",
    "Node",
    "items",
    "metadata",
    "spec",
    "status",
]


def valid_bodies() -> list[dict]:
    nodes = [
        node("n1", labels={"pool": "a"}),
        node("n2", annotations={"kubesalvo.io/usage-cpu": "3"}),
    ]
    team = pod(labels={"team": "a"})
    return [
        {"Pod": team, "Nodes": {"items": nodes}},
        {"Pod": team, "NodeNames": ["n1", "n2", "ghost"]},
        {"Pod": team, "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "x"}]}}},
        {"Pod": team, "NodeNameToVictims": {"n1": {"Pods": [pod("v")]}}},
    ]


def mutate(body, path: list[str], value):
    """Put ``value`` at the first place ``path`` reaches in a copy of ``body``."""
    copy = msgspec.json.decode(msgspec.json.encode(body))
    target = copy
    for key in path[:-1]:
        if isinstance(target, dict) and isinstance(target.get(key), dict):
            target = target[key]
    if isinstance(target, dict):
        target[path[-1]] = value
    return copy


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    verb=st.sampled_from(VERBS),
    base=st.sampled_from(range(4)),
    path=st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3),
    value=json_values,
)
def test_mutated_bodies_never_get_a_5xx(url, verb, base, path, value):
    body = mutate(valid_bodies()[base], path, value)
    assert send(url, verb, msgspec.json.encode(body)) in (200, 400)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    verb=st.sampled_from(VERBS), body=st.binary(max_size=300) | json_values.map(msgspec.json.encode)
)
def test_arbitrary_bodies_never_get_a_5xx(url, verb, body):
    assert send(url, verb, body) in (200, 400)
    assert send(url, "filter", msgspec.json.encode(valid_bodies()[0])) == 200
