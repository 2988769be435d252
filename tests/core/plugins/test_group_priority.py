"""GroupPriority's pod-only parts: the groupPriority label and the kubelet's QoS class."""

from __future__ import annotations

import pytest

from kubesalvo.core.plugins.group_priority import (
    QosClass,
    group_priority,
    invalid_priority_note,
    qos_class,
)

G = ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, (0, True)),
        ({"groupPriority": "7"}, (7, True)),
        ({"groupPriority": "-3"}, (-3, True)),
        ({"groupPriority": "+2"}, (2, True)),
        ({"groupPriority": "high"}, (0, False)),
        ({"groupPriority": "1.5"}, (0, False)),
        ({"groupPriority": ""}, (0, False)),
        ({"groupPriority": "9" * 40}, (0, False)),  # no huge integers from a label
    ],
)
def test_group_priority_label_missing_or_not_an_integer_counts_as_0(labels, expected):
    assert group_priority(labels) == expected


def test_the_warning_names_the_value():
    assert "'high' is not an integer" in invalid_priority_note("high")


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        ([], QosClass.BEST_EFFORT),
        ([({}, {})], QosClass.BEST_EFFORT),
        ([({"cpu": "0"}, {})], QosClass.BEST_EFFORT),  # zero requests do not count
        ([({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})], QosClass.BEST_EFFORT),
        ([G], QosClass.GUARANTEED),
        ([G, G], QosClass.GUARANTEED),
        # requests and limits are compared summed over the containers
        (
            [
                ({"cpu": "2", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}),
                ({"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}),
            ],
            QosClass.GUARANTEED,
        ),
        (
            [({"cpu": "1000m", "memory": "1Gi"}, {"cpu": "1", "memory": "1024Mi"})],
            QosClass.GUARANTEED,
        ),
        ([G, ({"cpu": "1"}, {})], QosClass.BURSTABLE),  # a container without limits
        ([({"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"})], QosClass.BURSTABLE),
        ([({"cpu": "1"}, {"cpu": "1"})], QosClass.BURSTABLE),  # no memory limit
        ([({}, {"cpu": "1", "memory": "1Gi"})], QosClass.BURSTABLE),  # not defaulted
        ([({"memory": "1Gi"}, {})], QosClass.BURSTABLE),
    ],
)
def test_qos_class_as_the_kubelet_computes_it(containers, expected):
    assert qos_class(containers) is expected


def test_qos_classes_pop_guaranteed_first():
    ranked = sorted(QosClass, key=int)
    assert [c.text for c in ranked] == ["Guaranteed", "Burstable", "BestEffort"]
