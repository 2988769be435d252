"""ApiDicts: the preemption picture's dicts converted once per object version."""

from __future__ import annotations

from kubesalvo.sched.cycle.post_filter import ApiDicts
from kubesalvo.sched.informers import to_api_dict
from kubesalvo.sched.informers.models import ObjectMeta, Pod


def pod(name: str, uid: str, version: str) -> Pod:
    return Pod(metadata=ObjectMeta(name=name, namespace="ns", uid=uid, resource_version=version))


def test_a_version_is_converted_once_and_a_new_version_again() -> None:
    dicts = ApiDicts()
    first = [pod("a", "uid-a", "1"), pod("b", "uid-b", "1")]
    a1, b1 = dicts.of(first)
    assert a1 == to_api_dict(first[0]) and b1 == to_api_dict(first[1])
    a2, b2 = dicts.of([pod("a", "uid-a", "1"), pod("b", "uid-b", "2")])
    assert a2 is a1  # the same version: the same dict
    assert b2 is not b1 and b2["metadata"]["resourceVersion"] == "2"


def test_only_the_versions_of_the_last_call_are_kept() -> None:
    dicts = ApiDicts()
    (gone,) = dicts.of([pod("a", "uid-a", "1")])
    dicts.of([pod("b", "uid-b", "1")])
    (again,) = dicts.of([pod("a", "uid-a", "1")])
    assert again == gone and again is not gone


def test_objects_without_a_uid_or_version_are_converted_each_time() -> None:
    dicts = ApiDicts()
    bare = [pod("a", "", ""), pod("b", "uid-b", "")]
    first = dicts.of(bare)
    second = dicts.of(bare)
    assert first == second
    assert all(x is not y for x, y in zip(first, second, strict=True))
