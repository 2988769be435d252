"""What the hints read of objects: a pod's API dict from the asking queue's converter
(``pod_forms``: the runtime's memo) inside it, converted on the spot outside it; API dicts
as they are; nodes' NodeInfo remembered by identity."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesalvo.core.pernode.hint_objects import api, node_info, pod_forms, spec_of
from tests.core.pernode.hint_fixtures import node, pod


def test_inside_pod_forms_a_pod_is_read_from_the_given_converter() -> None:
    asked: list[Any] = []
    memo = {"spec": {"nodeName": "n1"}}

    def convert(obj: Any) -> dict[str, Any]:
        asked.append(obj)
        return memo

    p = pod()
    with pod_forms(convert):
        assert api(p) is memo
        assert spec_of(p) == {"nodeName": "n1"}
    assert asked == [p, p]


def test_outside_pod_forms_a_pod_is_converted_on_the_spot() -> None:
    p = pod()
    with pod_forms(lambda obj: {}):
        pass
    assert api(p) == msgspec.to_builtins(p)
    with pod_forms(None):
        assert api(p) == msgspec.to_builtins(p)


def test_an_api_dict_is_read_as_it_is() -> None:
    given = {"metadata": {"name": "p"}}
    with pod_forms(lambda obj: {}):
        assert api(given) is given


def test_a_nodes_info_is_made_once_per_node_object() -> None:
    cordoned = node(unschedulable=True)
    assert node_info(cordoned) is node_info(cordoned)
    assert node_info(cordoned).unschedulable
    assert not node_info(node()).unschedulable
