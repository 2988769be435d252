"""Hostile configuration files against ``kubesalvo run``'s real entry point.

Every field of a rich, valid KubeSchedulerConfiguration is given values of the wrong JSON
type and values out of range (hypothesis picks the field, the value and whether the file
is YAML or JSON); whole files of arbitrary text too. The command must never end in a
traceback. A wrong type, an integer beyond int64, a NaN or an infinity is refused with
exit code 2 and a message that names the field; anything else either is refused the same
way or is accepted (then the run stops at the missing kubeconfig, exit code 1).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.sched.reliability.hostile import (
    field_path,
    get,
    json_class,
    no_traceback,
    paths,
    removed,
    replaced,
    run_cli,
)

# Every section and plugin args type kubesalvo reads, with valid values.
BASE = yaml.safe_load(
    """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 16
percentageOfNodesToScore: 50
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 10
delayCacheUntilActive: false
enableProfiling: true
# true is refused: kubesalvo has no contention profiler.
enableContentionProfiling: false
clientConnection:
  kubeconfig: ""
  acceptContentTypes: application/json
  contentType: application/json
  qps: 50.5
  burst: 100
leaderElection:
  leaderElect: true
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 2s
  resourceLock: leases
  resourceName: kubesalvo
  resourceNamespace: kube-system
kubesalvo:
  maxBurstPods: 1000
  burstGatheringWindow: 10ms
  podMaxInUnschedulablePodsDuration: 5m
profiles:
- schedulerName: kubesalvo
  percentageOfNodesToScore: 0
  plugins:
    multiPoint:
      disabled:
      - name: ImageLocality
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 5
    postFilter:
      disabled:
      - name: '*'
  pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResources: [example.com/foo]
      ignoredResourceGroups: [example.org]
      scoringStrategy:
        type: RequestedToCapacityRatio
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 2}
        requestedToCapacityRatio:
          shape:
          - {utilization: 0, score: 0}
          - {utilization: 100, score: 10}
  - name: NodeResourcesBalancedAllocation
    args:
      resources:
      - {name: cpu, weight: 1}
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: ScheduleAnyway
        minDomains: 2
        nodeAffinityPolicy: Honor
        nodeTaintsPolicy: Ignore
  - name: InterPodAffinity
    args:
      hardPodAffinityWeight: 1
      ignorePreferredTermsOfExistingPods: false
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: zone, operator: In, values: [a, b]}
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 3
          preference:
            matchExpressions:
            - {key: disk, operator: Exists}
  - name: DefaultPreemption
    args:
      minCandidateNodesPercentage: 10
      minCandidateNodesAbsolute: 100
- schedulerName: kubesalvo-two
"""
)
PATHS = list(paths(BASE))

HOSTILE_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, 1, 2**31, -(2**31) - 1, 2**63, 2**64, -(2**63) - 1, 10**400]),
    st.integers(),
    st.sampled_from([0.5, -0.5, 1e400, -1e400, math.nan, 1e-400, 1.0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "x", "-1", "1e400", "15", "NaN", "0s", "-1s", "9999999999h", "*"]),
    st.text(max_size=30),
    st.just("y" * 10_000),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=8), st.integers(), max_size=3),
)
# A value of one of these JSON types where the file has another is always refused.
_ACCEPTS = {"float": {"float", "int"}}


def must_refuse(old: Any, new: Any) -> bool:
    """Whether ``new`` in place of ``old`` can never be valid."""
    if new is None:
        return False  # null means "not set": the default stands in
    old_class, new_class = json_class(old), json_class(new)
    if new_class not in _ACCEPTS.get(old_class, {old_class}):
        return True
    if isinstance(new, float) and not math.isfinite(new):
        return True
    return isinstance(new, int) and not isinstance(new, bool) and abs(new) > 2**63


def write(document: Any, as_json: bool) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="reliability-config-"))
    if as_json:
        path = folder / "config.json"
        path.write_text(json.dumps(document))
    else:
        path = folder / "config.yaml"
        path.write_text(yaml.safe_dump(document))
    return path


def run(path: Path) -> Any:
    missing = path.parent / "no-such-kubeconfig"
    return run_cli(["run", "--config", str(path), "--kubeconfig", str(missing)])


def test_the_base_document_is_valid():
    outcome = run(write(BASE, as_json=False))
    no_traceback(outcome)
    assert outcome.code == 1 and "cannot load credentials" in outcome.stderr, outcome.stderr


# More examples for a long hunt: KUBESALVO_FUZZ_EXAMPLES=5000 python3 -m pytest ...
EXAMPLES = int(os.environ.get("KUBESALVO_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.sampled_from(PATHS), HOSTILE_VALUES, st.booleans())
def test_any_value_in_any_field_is_refused_with_its_path_or_accepted(path, value, as_json):
    old = get(BASE, path)
    written = write(replaced(BASE, path, value), as_json)
    # What the loader reads back (JSON has no NaN or infinity: json.dumps writes words).
    value = get(yaml.safe_load(written.read_text()), path)
    outcome = run(written)
    no_traceback(outcome)
    assert outcome.code in (1, 2), outcome.stderr
    if outcome.code == 2:
        assert outcome.stderr.startswith("kubesalvo run: "), outcome.stderr
        assert outcome.stdout == ""
    if must_refuse(old, value):
        assert outcome.code == 2, f"{field_path(path)}={value!r} accepted"
        assert field_path(path) in outcome.stderr, outcome.stderr


@FUZZ
@given(st.sampled_from(PATHS), st.booleans())
def test_a_field_left_out_is_defaulted_or_refused_with_its_path(path, as_json):
    outcome = run(write(removed(BASE, path), as_json))
    no_traceback(outcome)
    assert outcome.code in (1, 2), outcome.stderr


@FUZZ
@given(st.sampled_from([p for p in PATHS if isinstance(get(BASE, p), dict)]), st.text(max_size=12))
def test_an_unknown_field_anywhere_is_refused_with_its_path(path, name):
    target = get(BASE, path)
    if name in target or (path and path[-1] == "args" and name in ("apiVersion", "kind")):
        return
    outcome = run(write(replaced(BASE, (*path, name), 1), as_json=False))
    no_traceback(outcome)
    assert outcome.code == 2, outcome.stderr
    assert "Unknown field" in outcome.stderr


@FUZZ
@given(st.one_of(st.text(max_size=200).map(str.encode), st.binary(max_size=200)))
def test_arbitrary_bytes_are_refused_or_accepted_never_a_traceback(data):
    folder = Path(tempfile.mkdtemp(prefix="reliability-config-"))
    path = folder / "config.yaml"
    path.write_bytes(data)
    outcome = run(path)
    no_traceback(outcome)
    assert outcome.code in (1, 2), outcome.stderr


DEEP = [
    "[" * 1_500,
    "a: " + "[" * 1_500 + "]" * 1_500,
    "profiles: " + "{a: " * 1_500 + "1" + "}" * 1_500,
    "a: &a [x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b, *b]\n",
    "\x00\xff\xfe",
    "apiVersion: !!python/object/apply:os.system ['true']\n",
]


def test_deep_nesting_aliases_and_unsafe_tags_are_refused_with_exit_2(tmp_path):
    for index, text in enumerate(DEEP):
        path = tmp_path / f"deep-{index}.yaml"
        path.write_text(text, encoding="utf-8")
        outcome = run(path)
        no_traceback(outcome)
        assert outcome.code == 2, (text[:40], outcome.stderr[:300])
        assert outcome.stderr.startswith("kubesalvo run: "), outcome.stderr[:300]
