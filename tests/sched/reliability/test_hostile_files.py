"""Hostile snapshot and scenario files against ``kubesalvo simulate``'s real entry point.

A snapshot is cut short at any byte, given another format or version, or has any of its
fields (down to a pod's container requests and a node's allocatable) replaced by a value
of another type or out of range; a scenario has any field replaced the same way. The
command either simulates (exit 0) or refuses the file with exit code 2 and one line on
standard error; it never ends in a traceback.
"""

from __future__ import annotations

import functools
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sched.reliability.hostile import (
    Outcome,
    no_traceback,
    paths,
    removed,
    replaced,
    run_cli,
)

EXAMPLES = int(os.environ.get("KUBESALVO_FUZZ_EXAMPLES", "20"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

HOSTILE_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, 1, 2**31, 2**63, 2**64, -(2**63) - 1]),
    st.integers(),
    st.sampled_from([0.5, -0.5, math.inf, -math.inf, math.nan]),
    st.sampled_from(["", "-1", "1e400", "1e-400", "0.000000001m", "18446744073709551616",
                     "9Ei", "99999999999999999999999Ei", "abc", "NaN", "In", "Exists", "Gt"]),
    st.text(max_size=20),
    st.lists(st.sampled_from(["a", 1, None]), max_size=3),
    st.dictionaries(st.sampled_from(["a", "cpu", "key", ""]), st.sampled_from(["1", 1, None]),
                    max_size=3),
)  # fmt: skip


# msgpack holds integers of 64 bits at most.
PACKABLE_VALUES = HOSTILE_VALUES.filter(
    lambda v: not (isinstance(v, int) and not -(2**63) <= v < 2**64)
)


def simulate(*argv: str) -> Outcome:
    return run_cli(["simulate", "--json", *argv])


def refused_or_simulated(outcome: Outcome) -> None:
    no_traceback(outcome)
    assert outcome.code in (0, 2), outcome.stderr
    if outcome.code == 2:
        lines = outcome.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kubesalvo simulate: error: "), (
            outcome.stderr[-2000:]
        )


# --- snapshots ----------------------------------------------------------------------------


@functools.cache
def small_snapshot() -> bytes:
    """A small real snapshot: 6 nodes, a mixed burst of 20 pods and 5 running."""
    folder = Path(tempfile.mkdtemp(prefix="reliability-snapshot-"))
    scenario = folder / "small.yaml"
    scenario.write_text(
        "name: small\nseed: 3\nfleet: {nodes: 6}\nworkloads:\n"
        "- {shape: mixed, pods: 5, bound: true, name: running}\n"
        "- {shape: mixed, pods: 20}\n"
    )
    target = folder / "small.snapshot"
    outcome = simulate("--scenario", str(scenario), "--save-snapshot", str(target))
    assert outcome.code == 0, outcome.stderr
    return target.read_bytes()


def write_bytes(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "hostile.snapshot"
    path.write_bytes(data)
    return path


def test_the_base_snapshot_simulates(tmp_path):
    outcome = simulate("--snapshot", str(write_bytes(tmp_path, small_snapshot())))
    no_traceback(outcome)
    assert outcome.code == 0, outcome.stderr


@FUZZ
@given(cut=st.floats(min_value=0.0, max_value=0.999))
def test_a_truncated_snapshot_is_refused_in_one_line(tmp_path, cut):
    data = small_snapshot()[: int(len(small_snapshot()) * cut)]
    outcome = simulate("--snapshot", str(write_bytes(tmp_path, data)))
    refused_or_simulated(outcome)
    assert outcome.code == 2


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ({"version": 99}, "version"),
        ({"version": "2"}, "version"),
        ({"version": None}, "version"),
        ({"format": "something-else"}, "format"),
        ({"nodes": {"a": 1}}, "nodes"),
        ({"pods": "many"}, "pods"),
    ],
)
def test_a_wrong_version_format_or_section_type_is_refused_in_one_line(tmp_path, header, expected):
    document = msgpack.unpackb(small_snapshot())
    document.update(header)
    outcome = simulate("--snapshot", str(write_bytes(tmp_path, msgpack.packb(document))))
    refused_or_simulated(outcome)
    assert outcome.code == 2 and expected in outcome.stderr


@FUZZ
@given(data=st.data())
def test_any_value_anywhere_in_a_snapshot_is_simulated_or_refused_in_one_line(tmp_path, data):
    document = msgpack.unpackb(small_snapshot())
    path = data.draw(st.sampled_from(sorted(paths(document), key=repr)), label="path")
    if data.draw(st.booleans(), label="remove"):
        document = removed(document, path)
    else:
        document = replaced(document, path, data.draw(PACKABLE_VALUES, label="value"))
    outcome = simulate("--snapshot", str(write_bytes(tmp_path, msgpack.packb(document))))
    refused_or_simulated(outcome)


@FUZZ
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_as_a_snapshot_are_refused_in_one_line(tmp_path, data):
    outcome = simulate("--snapshot", str(write_bytes(tmp_path, data)))
    refused_or_simulated(outcome)


# --- scenarios ----------------------------------------------------------------------------

SCENARIO = yaml.safe_load(
    """
name: hostile
description: every field of a scenario
seed: 5
schedulerName: kubesalvo
fleet:
  nodes: 8
  region: eu-west-1
  zones: [eu-west-1a, eu-west-1b]
  cordonedFraction: 0.1
  pools: {general: 3, gpu: 1}
workloads:
- {name: rs, shape: replicasets, pods: 10, classes: 2}
- {name: one, shape: distinct, pods: 5}
- {name: mix, shape: mixed, pods: 10, bound: true}
- {name: gang, shape: gangs, pods: 8}
"""
)
# Values a scenario may carry that a test cannot afford to generate (a billion nodes):
# the parser refuses them by their size, which a test checks separately.
SMALL_VALUES = HOSTILE_VALUES.filter(
    lambda v: not (isinstance(v, int) and not isinstance(v, bool) and v > 10_000)
)


def write_scenario(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "hostile.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_the_base_scenario_simulates(tmp_path):
    outcome = simulate("--scenario", str(write_scenario(tmp_path, SCENARIO)))
    no_traceback(outcome)
    assert outcome.code == 0, outcome.stderr


@FUZZ
@given(data=st.data())
def test_any_value_in_any_scenario_field_is_simulated_or_refused_in_one_line(tmp_path, data):
    path = data.draw(st.sampled_from(list(paths(SCENARIO))), label="path")
    if data.draw(st.booleans(), label="remove"):
        document = removed(SCENARIO, path)
    else:
        document = replaced(SCENARIO, path, data.draw(SMALL_VALUES, label="value"))
    outcome = simulate("--scenario", str(write_scenario(tmp_path, document)))
    refused_or_simulated(outcome)


@pytest.mark.parametrize(
    "path",
    [("fleet", "nodes"), ("workloads", 0, "pods"), ("workloads", 0, "classes")],
)
@pytest.mark.parametrize("value", [10**12, 2**64])
def test_a_count_too_large_to_generate_is_refused_by_its_size(tmp_path, path, value):
    outcome = simulate("--scenario", str(write_scenario(tmp_path, replaced(SCENARIO, path, value))))
    refused_or_simulated(outcome)
    assert outcome.code == 2 and ".".join(map(str, path)).split(".")[-1] in outcome.stderr


@FUZZ
@given(text=st.text(max_size=200))
def test_arbitrary_text_as_a_scenario_is_refused_in_one_line(tmp_path, text):
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    outcome = simulate("--scenario", str(path))
    refused_or_simulated(outcome)
