"""core/class_cache.py: node tables kept across bursts give the placements fresh ones give.

Every test places the same pods on two states built alike, one with the tables kept across
bursts and one with fresh tables for every burst (``class_cache.ENABLED`` False, the
encoder as it was before), and compares the outcomes; the tables are shown to be reused
while the nodes stay the same and to be new after each kind of node change.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesalvo.core import class_cache
from kubesalvo.core.encode import ClassInfo, Encoder
from kubesalvo.core.place import place_burst
from kubesalvo.core.plugins import names
from kubesalvo.core.profile import Profile
from kubesalvo.core.state import ClusterState
from kubesalvo.core.ties import TieBreak

IMAGE_SIZE = 500 * 1024 * 1024


def node(
    name: str,
    zone: str = "a",
    disk: str = "hdd",
    cpu: str = "4",
    taints: tuple[str, ...] = (),
    images: tuple[str, ...] = (),
) -> dict[str, Any]:
    taint_list = []
    for taint in taints:
        key, effect = taint.split(":")
        taint_list.append({"key": key, "value": "x", "effect": effect})
    return {
        "metadata": {"name": name, "labels": {"zone": zone, "disk": disk, "name": name}},
        "spec": {"taints": taint_list},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "images": [{"names": [image], "sizeBytes": IMAGE_SIZE} for image in images],
        },
    }


# The pods' classes: what the static tables read (selectors, required and preferred node
# affinity, tolerations, images), and requests.
CLASSES: list[dict[str, Any]] = [
    {},
    {"nodeSelector": {"zone": "b"}},
    {"tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]},
    {
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 5,
                        "preference": {
                            "matchExpressions": [
                                {"key": "disk", "operator": "In", "values": ["ssd"]}
                            ]
                        },
                    }
                ]
            }
        }
    },
    {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "NotIn", "values": ["c"]}
                            ]
                        }
                    ]
                }
            }
        }
    },
    {"image": "big:2"},
    {"cpu": "1500m"},
    # a claim placed without DRA objects: DynamicResources' PreFilter keeps it pending
    {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}]},
]


def v137() -> Profile:
    """The profile `kubesalvo bench --kubernetes v1.37.2` runs: DynamicResources scores,
    a further channel of the MAX kind beside NodeAffinity's."""
    default = Profile.default()
    return dataclasses.replace(default, scores=(*default.scores, (names.DYNAMIC_RESOURCES, 2)))


PROFILES = {"default": Profile.default, "v1.37": v137}
_names = itertools.count()


def pod(cls: int) -> dict[str, Any]:
    spec = copy.deepcopy(CLASSES[cls])
    image = spec.pop("image", "big:1")
    cpu = spec.pop("cpu", "200m")
    name = f"p{next(_names)}"
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name, "labels": {"app": str(cls)}},
        "spec": {
            "containers": [{"name": "c", "image": image, "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }


class Twins:
    """Two states changed alike: ``kept`` places with the tables kept across bursts,
    ``fresh`` with new tables for every burst."""

    def __init__(self, nodes: list[dict[str, Any]], profile: Profile) -> None:
        self.profile = profile
        self.kept, self.fresh = ClusterState(), ClusterState()
        self.kept_ties, self.fresh_ties = TieBreak(7), TieBreak(7)
        for n in nodes:
            self.change(lambda state, n=n: state.add_node(n))

    def change(self, how: Callable[[ClusterState], Any]) -> None:
        how(self.kept)
        how(self.fresh)

    def place(self, pods: list[dict[str, Any]]) -> tuple[Any, Any]:
        kept = place_burst(self.kept, pods, self.profile, ties=self.kept_ties)
        class_cache.ENABLED = False
        try:
            fresh = place_burst(self.fresh, copy.deepcopy(pods), self.profile, ties=self.fresh_ties)
        finally:
            class_cache.ENABLED = True
        assert kept.nodes == fresh.nodes
        assert kept.messages == fresh.messages
        assert kept.scores.tolist() == fresh.scores.tolist()
        assert kept.reason_counts == fresh.reason_counts
        return kept, fresh


def fleet() -> list[dict[str, Any]]:
    return [
        node("n0", zone="a", disk="ssd", images=("big:1",)),
        node("n1", zone="b", taints=("dedicated:NoSchedule",)),
        node("n2", zone="c", disk="ssd", taints=("spot:PreferNoSchedule",)),
        node("n3", zone="a", cpu="8"),
    ]


@pytest.mark.parametrize("profile", list(PROFILES))
def test_a_later_burst_reuses_the_rows_an_earlier_one_built(profile):
    profile = PROFILES[profile]()
    twins = Twins(fleet(), profile)
    twins.place([pod(c) for c in range(len(CLASSES))])
    tables = class_cache.tables_for(twins.kept, profile)
    built = {key: id(row) for key, row in tables.static.items()}
    assert built and tables.fixed and tables.aff and tables.classes
    assert bool(tables.extras) == (profile.score_weights.get(names.DYNAMIC_RESOURCES, 0) > 0)
    twins.place([pod(c) for c in range(len(CLASSES))])
    again = class_cache.tables_for(twins.kept, profile)
    assert again is tables
    assert {key: id(row) for key, row in again.static.items()} == built


def test_an_equal_profile_shares_the_tables_and_another_does_not():
    state = ClusterState()
    state.add_node(node("n0"))
    tables = class_cache.tables_for(state, Profile.default())
    assert class_cache.tables_for(state, Profile.default()) is tables
    other = Profile(scores=((names.IMAGE_LOCALITY, 3),))
    assert class_cache.tables_for(state, other) is not tables


# Each change, and a class whose placement it changes.
CHANGES: dict[str, tuple[Callable[[ClusterState], Any], int]] = {
    "a node added": (lambda s: s.add_node(node("n4", zone="b")), 1),
    "a node removed": (lambda s: s.remove_node("n1"), 2),
    "a node relabelled": (lambda s: s.update_node(node("n3", zone="b", cpu="8")), 1),
    "a node retainted": (
        lambda s: s.update_node(node("n0", zone="a", disk="ssd", taints=("dedicated:NoSchedule",))),
        0,
    ),
    "a node's allocatable changed": (
        lambda s: s.update_node(node("n3", zone="a", cpu="1")),
        6,
    ),
    "a node's images changed": (
        lambda s: s.update_node(node("n3", zone="a", images=("big:2",))),
        5,
    ),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_node_change_gives_new_tables_and_the_placements_of_fresh_ones(change):
    how, cls = CHANGES[change]
    profile = Profile.default()
    twins = Twins(fleet(), profile)
    twins.place([pod(cls) for _ in range(3)])
    tables = class_cache.tables_for(twins.kept, profile)
    twins.change(how)
    twins.place([pod(cls) for _ in range(3)])
    assert class_cache.tables_for(twins.kept, profile) is not tables
    assert class_cache.tables_for(twins.kept, profile).version == twins.kept.version


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_moves_the_pod_it_is_paired_with(change):
    # So that the test above shows tables that would be wrong to keep.
    how, cls = CHANGES[change]
    state = ClusterState()
    for n in fleet():
        state.add_node(n)
    before = plan_of(state, cls)
    how(state)
    assert plan_of(state, cls) != before


def plan_of(state: ClusterState, cls: int) -> tuple[Any, ...]:
    class_cache.ENABLED = False
    try:
        result = place_burst(state, [pod(cls)], Profile.default(), commit=False)
    finally:
        class_cache.ENABLED = True
    return (result.nodes[0], result.scores.tolist()[0], result.reason_counts[0])


NODE_NAMES = ["n0", "n1", "n2", "n3", "n4", "n5"]
nodes_st = st.builds(
    node,
    st.sampled_from(NODE_NAMES),
    zone=st.sampled_from("abc"),
    disk=st.sampled_from(["ssd", "hdd"]),
    cpu=st.sampled_from(["1", "2", "4"]),
    taints=st.lists(
        st.sampled_from(["dedicated:NoSchedule", "spot:PreferNoSchedule", "gone:NoExecute"]),
        unique=True,
        max_size=2,
    ).map(tuple),
    images=st.lists(st.sampled_from(["big:1", "big:2"]), unique=True, max_size=2).map(tuple),
)
steps_st = st.lists(
    st.one_of(
        st.tuples(
            st.just("burst"), st.lists(st.integers(0, len(CLASSES) - 1), min_size=1, max_size=8)
        ),
        st.tuples(st.just("put"), nodes_st),
        st.tuples(st.just("remove"), st.sampled_from(NODE_NAMES)),
    ),
    min_size=1,
    max_size=12,
)


@pytest.mark.parametrize("profile", list(PROFILES))
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.lists(nodes_st, min_size=1, max_size=4), steps=steps_st)
def test_random_bursts_and_node_changes_place_as_fresh_tables_do(profile, first, steps):
    twins = Twins(first, PROFILES[profile]())
    for kind, arg in steps:
        if kind == "burst":
            twins.place([pod(c) for c in arg])
        elif kind == "put":
            twins.change(lambda s, n=arg: s.add_node(copy.deepcopy(n)))
        else:
            twins.change(lambda s, name=arg: s.remove_node(name))


def test_a_class_is_kept_without_its_pods_and_one_with_volumes_is_not():
    profile = Profile.default()
    twins = Twins(fleet(), profile)
    with_volume = pod(0)
    with_volume["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    twins.place([pod(1), pod(1), with_volume])
    kept = list(class_cache.tables_for(twins.kept, profile).classes.values())
    assert [info.spec.get("nodeSelector") for info in kept] == [{"zone": "b"}]
    assert kept[0].pods == 0
    twins.place([pod(1), with_volume | {"metadata": {**with_volume["metadata"], "uid": "v2"}}])


def test_a_kept_class_is_copied_with_every_field_but_its_pods():
    state = ClusterState()
    state.add_node(node("n0"))
    encoder = Encoder(state, Profile.default())
    encoder.classify([pod(3), pod(3)])
    info = encoder.classes[0]
    copied = info.copy()
    assert copied.pods == 0 and info.pods == 2
    assert copied.class_filters == {} and copied.class_filters is not info.class_filters
    for f in dataclasses.fields(ClassInfo):
        if f.name not in ("pods", "class_filters"):
            assert getattr(copied, f.name) is getattr(info, f.name), f.name


def one_pod_classes(count: int, start: int) -> list[dict[str, Any]]:
    pods = [pod(1) for _ in range(count)]
    for i, p in enumerate(pods):
        p["metadata"]["labels"] = {"app": f"solo-{start + i}"}
    return pods


def test_a_burst_of_more_new_classes_than_the_table_holds_keeps_none(monkeypatch):
    profile = Profile.default()
    twins = Twins(fleet(), profile)
    monkeypatch.setattr(class_cache, "_CELLS", 64 * twins.kept.rows)
    assert class_cache.limit(twins.kept.rows) == 64
    twins.place([pod(2)])
    classes = class_cache.tables_for(twins.kept, profile).classes
    assert len(classes) == 1
    # 65 new classes would take the table past 64 (the next burst's trim would empty it):
    # none is kept, the class kept before stays, and the placements are fresh tables'.
    twins.place(one_pod_classes(65, 0))
    assert len(classes) == 1
    # 64 new ones are kept; the table then holds more than 64 and the next burst's trim
    # (tables_for) empties it.
    twins.place(one_pod_classes(64, 100))
    assert len(classes) == 65
    assert class_cache.tables_for(twins.kept, profile).classes is classes
    assert not classes
