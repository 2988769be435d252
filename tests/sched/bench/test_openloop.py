"""Open-loop creation: the arguments, the schedule, how far binding kept up, and paced
creation on the real API server (the sends follow the schedule; timing is not asserted
beyond the order the schedule fixes)."""

from __future__ import annotations

import pytest

from kubesalvo.sched.bench import openloop
from kubesalvo.sched.bench.podwatch import Created
from kubesalvo.sched.cluster.api import ApiError
from kubesalvo.sched.cluster.controlplane import ControlPlane


@pytest.mark.parametrize("text", ["0", "-5", "fast", "inf", "nan", ""])
def test_a_rate_that_is_not_a_positive_number_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="positive number"):
        openloop.parse_rate(text)


def test_rates_are_percentages_of_the_ceiling_in_the_order_given() -> None:
    assert openloop.parse_rates("25%, 50%,90%") == [0.25, 0.5, 0.9]
    assert openloop.parse_rates("100%") == [1.0]


@pytest.mark.parametrize("text", ["25", "0%", "150%", "25%,,50%", "half%", ""])
def test_rates_outside_0_to_100_percent_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="percentages of the raw-bind ceiling"):
        openloop.parse_rates(text)


def test_schedule_spaces_the_pods_evenly() -> None:
    assert openloop.schedule(4, 2.0) == [0.0, 0.5, 1.0, 1.5]


def test_keep_up_of_a_scheduler_that_binds_each_pod_soon_after_its_creation() -> None:
    creates = [0.0, 1.0, 2.0, 3.0, 4.0]
    binds = [0.1, 1.1, 2.1, 3.1, 4.1]
    figures = openloop.keep_up(creates, binds)
    # The last pod is bound just after the window: 4 of 5 inside it.
    assert figures["bind_share"] == 0.8
    assert figures["backlog_at_last_create"] == 1
    assert figures["drain_seconds"] == pytest.approx(0.1)
    assert figures["kept_up"] is False  # 80% < 95% over a window of five pods
    longer = [float(i) for i in range(100)]
    assert openloop.keep_up(longer, [t + 0.1 for t in longer])["kept_up"] is True


def test_keep_up_of_a_scheduler_that_falls_behind() -> None:
    creates = [float(i) for i in range(10)]
    binds = [2.0 * i + 0.5 for i in range(10)]
    figures = openloop.keep_up(creates, binds)
    assert figures["bind_share"] == 0.5
    assert figures["backlog_at_last_create"] == 5
    assert figures["drain_seconds"] == pytest.approx(18.5 - 9.0)
    assert figures["kept_up"] is False


def test_keep_up_with_missing_binds_never_says_kept_up() -> None:
    creates = [float(i) for i in range(100)]
    assert openloop.keep_up(creates, creates[:50])["kept_up"] is False
    assert openloop.keep_up([0.0], [0.1]) == {}


def test_creator_summary_reports_schedule_and_lag() -> None:
    created = Created(answered={"a/p0": 1.0, "a/p1": 2.0, "a/p2": 3.0}, first=1.0, last=3.0)
    summary = openloop.creator_summary(1.0, 3, created, [0.0, 0.01, 0.2])
    assert summary["offered_pods_per_second"] == 1.0
    assert summary["created"] == 3 and summary["achieved_pods_per_second"] == 1.0
    assert summary["lag_seconds"]["max"] == 0.2


@pytest.mark.integration
def test_paced_creation_sends_each_pod_at_its_time_and_records_every_answer(
    control_plane: ControlPlane, namespace: str
) -> None:
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"paced-{i}", "namespace": namespace},
            "spec": {
                "schedulerName": "nobody",
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
            },
        }
        for i in range(20)
    ]
    created = Created()
    lag: list[float] = []
    control_plane.call(lambda client: openloop.create_paced(client, pods, 40.0, created, lag))
    keys = [f"{namespace}/paced-{i}" for i in range(20)]
    assert set(created.answered) == set(keys) and len(lag) == 20
    sent = [created.sent[key] for key in keys]
    assert sent == sorted(sent)
    # Open loop: no pod is sent before its due time (19 / 40 s after the first).
    assert sent[-1] - created.first >= 19 / 40
    assert all(value >= 0 for value in lag)

    async def names(client):  # type: ignore[no-untyped-def]
        listing = await client.request("GET", f"/api/v1/namespaces/{namespace}/pods")
        return {item["metadata"]["name"] for item in listing["items"]}

    assert control_plane.call(names) == {f"paced-{i}" for i in range(20)}


@pytest.mark.integration
def test_a_refused_create_ends_paced_creation_with_the_servers_reason(
    control_plane: ControlPlane, namespace: str
) -> None:
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": namespace}}
    with pytest.raises(ApiError, match="422"):
        control_plane.call(lambda client: openloop.create_paced(client, [bad], 10.0, Created(), []))
