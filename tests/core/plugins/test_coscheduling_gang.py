"""Pod group keys and minimums from the seeds' and scheduler-plugins' labels."""

import pytest

from kubesalvo.core.plugins.coscheduling.gang import (
    GroupKey,
    group_minimums,
    group_of,
    malformed_groups,
    min_available,
    pod_group_spec,
)


def member(name, labels, namespace="ml"):
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


def test_group_labels_in_order_of_precedence():
    assert group_of(member("a", {"podGroup": "train"})) == GroupKey("ml", "train")
    assert group_of(member("a", {"scheduling.x-k8s.io/pod-group": "pg"})) == GroupKey("ml", "pg")
    both = member("a", {"podGroup": "seed", "scheduling.x-k8s.io/pod-group": "pg"})
    assert group_of(both) == GroupKey("ml", "seed")
    assert group_of(member("a", {"app": "web"})) is None
    assert group_of(member("a", {"podGroup": ""})) is None
    assert str(GroupKey("ml", "train")) == "ml/train"


def test_min_available_parses_positive_integers_only():
    assert min_available(member("a", {"minAvailable": "3"})) == 3
    assert min_available(member("a", {})) is None
    for bad in ("0", "-1", "two", "1.5", "", "²"):
        with pytest.raises(ValueError, match="minAvailable"):
            min_available(member("a", {"minAvailable": bad}))


def test_a_groups_minimum_comes_from_its_first_labelled_pod_or_defaults_to_all():
    burst = [
        member("a0", {"podGroup": "a"}),
        member("a1", {"podGroup": "a", "minAvailable": "2"}),
        member("a2", {"podGroup": "a", "minAvailable": "3"}),
        member("b0", {"podGroup": "b"}),
        member("b1", {"podGroup": "b"}),
        member("b2", {"podGroup": "b"}, namespace="other"),
        member("solo", {}),
    ]
    assert group_minimums(burst) == {
        GroupKey("ml", "a"): 2,
        GroupKey("ml", "b"): 2,
        GroupKey("other", "b"): 1,
    }


def test_a_malformed_minimum_refuses_its_group_naming_the_pod_and_others_keep_theirs():
    burst = [
        member("a0", {"podGroup": "a", "minAvailable": "2"}),
        member("a1", {"podGroup": "a", "minAvailable": "lots"}),
        member("b0", {"podGroup": "b", "minAvailable": "1"}),
        member("b1", {"podGroup": "b"}),
    ]
    assert malformed_groups(burst) == {
        GroupKey("ml", "a"): "pod group ml/a: label minAvailable='lots' is not a positive "
        "integer (pod a1)"
    }
    # group_minimums reads what it can and never raises
    assert group_minimums(burst) == {GroupKey("ml", "a"): 2, GroupKey("ml", "b"): 1}
    assert malformed_groups(burst[2:]) == {}


def test_a_pod_group_object_gives_minimum_room_and_timeout():
    spec = pod_group_spec(
        {
            "spec": {
                "minMember": 4,
                "minResources": {"cpu": "4", "memory": "1Gi"},
                "scheduleTimeoutSeconds": 30,
            }
        }
    )
    assert spec.min_member == 4
    assert spec.min_resources == {"cpu": 4000, "memory": 1 << 30}
    assert spec.timeout_seconds == 30
    assert pod_group_spec({}).min_member == 1  # an unset minMember: any member may go


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"minMember": -1}, "minMember"),
        ({"minMember": "4"}, "minMember"),
        ({"scheduleTimeoutSeconds": 0}, "scheduleTimeoutSeconds"),
        ({"minResources": {"cpu": "lots"}}, "minResources"),
        ({"minResources": ["cpu"]}, "minResources"),
    ],
)
def test_a_bad_pod_group_spec_is_refused_naming_the_field(spec, field):
    with pytest.raises(ValueError, match=field):
        pod_group_spec({"spec": spec})
