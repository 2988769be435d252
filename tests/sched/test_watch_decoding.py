"""An object the typed decoder refuses is skipped with a warning naming it; it never stops
a list page (nor, through the same decoder, a watch), so the informer still syncs."""

from __future__ import annotations

import logging

import msgspec
import pytest

from kubesalvo.sched.informers.watch import NODES, PODS, Decoders


def _node(name: str, allocatable: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "resourceVersion": "7"},
        "status": {"allocatable": allocatable},
    }


def _page(*items: object) -> bytes:
    meta = {"resourceVersion": "42", "continue": "next"}
    return msgspec.json.encode({"kind": "NodeList", "metadata": meta, "items": list(items)})


def test_a_page_keeps_every_object_that_decodes_and_names_the_one_that_does_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    decoders = Decoders(NODES)
    body = _page(_node("a", {"cpu": "4"}), _node("bad", ["not", "a", "map"]), _node("b", {}))
    with caplog.at_level(logging.WARNING):
        page = decoders.decode_page(body)
    assert [node.metadata.name for node in page.items] == ["a", "b"]
    assert (page.metadata.resource_version, page.metadata.continue_) == ("42", "next")
    assert decoders.skipped == 1
    assert "nodes bad skipped: it does not decode" in caplog.text
    assert "status.allocatable" in caplog.text  # msgspec's path of the refused field


def test_a_clean_page_takes_the_fast_path_and_skips_nothing() -> None:
    decoders = Decoders(NODES)
    page = decoders.decode_page(_page(_node("a", {"cpu": "4"})))
    assert [node.metadata.name for node in page.items] == ["a"] and decoders.skipped == 0


def test_one_watched_object_that_does_not_decode_is_none_with_its_namespaced_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    decoders = Decoders(PODS)
    pod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": "oops"}}
    with caplog.at_level(logging.WARNING):
        assert decoders.decode_object(msgspec.json.encode(pod)) is None
    assert "pods ns/p skipped" in caplog.text
    good = {"metadata": {"name": "q", "namespace": "ns"}, "spec": {"containers": []}}
    assert decoders.decode_object(msgspec.json.encode(good)).metadata.name == "q"


def test_what_is_not_json_at_all_is_still_a_decode_error() -> None:
    # The stream's own problem (a cut connection): the watch backs off and resumes.
    with pytest.raises(msgspec.DecodeError):
        Decoders(NODES).decode_page(b'{"items": [')
