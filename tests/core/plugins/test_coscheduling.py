"""Coscheduling's decisions: wait for members, time out, place with what is bound counted."""

from __future__ import annotations

import pytest

from kubesalvo.core.plugins.coscheduling import (
    ERR_REASON_LESS_THAN_MIN_AVAILABLE,
    ERR_REASON_TIMED_OUT,
    CoschedulingArgs,
    GangCheck,
    Verdict,
    check_gang,
    short_of,
)
from kubesalvo.core.plugins.framework import ArgsError, Code
from kubesalvo.core.plugins.registry import PLUGINS


def gang(pending: int, bound: int = 0, minimum: int = 8, waited: float = 0.0) -> GangCheck:
    return GangCheck("ns/g", minimum, pending, bound, waited, timeout=60.0)


def test_fewer_members_than_the_minimum_wait_with_the_count():
    verdict, text = check_gang(gang(7))
    assert verdict is Verdict.WAIT
    assert text == f"{ERR_REASON_LESS_THAN_MIN_AVAILABLE} (ns/g: 7 of 8 exist)"


def test_past_the_timeout_the_gang_is_rejected():
    verdict, text = check_gang(gang(7, waited=61))
    assert verdict is Verdict.TIMED_OUT
    assert text.startswith(ERR_REASON_TIMED_OUT) and "7 of 8 exist" in text


def test_members_already_bound_count_towards_the_minimum():
    check = gang(5, bound=3)
    assert check_gang(check) == (Verdict.PLACE, "")
    assert check.needed == 5  # the kernel must place the 5 pending ones
    assert gang(4, bound=8).needed == 0  # complete already: members go one by one


def test_waiting_is_unresolvable_and_a_rolled_back_gang_may_be_helped_by_room():
    reasons = PLUGINS["Coscheduling"].reasons
    assert reasons[ERR_REASON_LESS_THAN_MIN_AVAILABLE] is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert reasons[ERR_REASON_TIMED_OUT] is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert reasons["pod group could not reach its minAvailable"] is Code.UNSCHEDULABLE


def test_args_defaults_and_refusals():
    assert CoschedulingArgs().permit_waiting_time_seconds == 60
    with pytest.raises(ArgsError) as err:
        CoschedulingArgs(permit_waiting_time_seconds=0, pod_group_backoff_seconds=-1)
    paths = [p.path for p in err.value.problems]
    assert paths == ["permitWaitingTimeSeconds", "podGroupBackoffSeconds"]


def test_min_resources_short_of_the_free_room():
    assert short_of({"cpu": 4000, "memory": 1 << 30}, {"cpu": 3000, "memory": 2 << 30}) == ["cpu"]
    assert short_of({"nvidia.com/gpu": 1}, {"cpu": 1}) == ["nvidia.com/gpu"]
    assert short_of({"cpu": 1000}, {"cpu": 1000}) == []
