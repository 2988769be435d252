"""The QoS history behind the overview's charts: a bounded ring per controller, at most a
bounded number of controllers, a controller gone from the table gone from the history,
and no infinity (which JSON cannot carry) in what the page reads."""

from __future__ import annotations

import json
import math

from kubesalvo.sched.web.overview import QosHistory


def row(controller: str, qos: float, slo: float = 0.9) -> dict:
    return {"controller": controller, "qos": qos, "slo": slo}


def test_each_controller_keeps_only_its_newest_samples():
    history = QosHistory(points=3)
    for second in range(5):
        history.sample([row("ns/Deployment/web", second / 10)], now=100.0 + second)
    assert history.of("ns/Deployment/web") == [
        [102.0, 0.2, 0.9],
        [103.0, 0.3, 0.9],
        [104.0, 0.4, 0.9],
    ]


def test_no_more_controllers_than_the_bound_and_the_gone_are_dropped():
    history = QosHistory(controllers=2)
    history.sample([row("a", 1.0), row("b", 1.0), row("c", 1.0)], now=1.0)
    assert sorted(history.series) == ["a", "b"]
    assert history.of("c") == []
    history.sample([row("b", 0.5), row("c", 0.7)], now=2.0)
    assert sorted(history.series) == ["b", "c"]
    assert history.of("b") == [[1.0, 1.0, 0.9], [2.0, 0.5, 0.9]]


def test_an_unbounded_qos_is_kept_as_null_so_the_page_can_parse_it():
    history = QosHistory()
    history.sample([row("idle", math.inf)], now=1.0)
    assert json.loads(json.dumps(history.of("idle"))) == [[1.0, None, 0.9]]
