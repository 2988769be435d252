"""Names-only requests: the cache of name lists follows the feed's nodes, and prioritize's
hand-joined JSON is what msgspec writes."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesalvo.sched.extender import wire
from kubesalvo.sched.extender.feed import NodeFeed
from kubesalvo.sched.extender.names import Listing, NamesCache
from tests.helpers.extender import config, node, pod, post, running_extender, typed

AVOID = "example.kubesalvo.io/avoid"


def feed_with(*names: str) -> NodeFeed:
    feed = NodeFeed([])
    for name in names:
        feed.put_node(typed(node(name)))
    return feed


def listing_of(cache: NamesCache, names: list[str]) -> tuple[list[str], list[int]]:
    found = cache.listing(msgspec.json.encode(names), msgspec.json.decode)
    return list(found.array), found.rows.tolist()


def test_a_node_added_after_a_cached_list_is_found_by_the_same_list():
    feed = feed_with("n1", "n2")
    cache = NamesCache(feed)
    assert listing_of(cache, ["n1", "n3"]) == (["n1", "n3"], [0, -1])
    feed.put_node(typed(node("n3")))
    assert listing_of(cache, ["n1", "n3"]) == (["n1", "n3"], [0, 2])


def test_a_removed_node_is_unknown_and_its_reused_row_goes_to_the_new_node():
    feed = feed_with("n1", "n2")
    cache = NamesCache(feed)
    assert listing_of(cache, ["n1", "n2", "n4"])[1] == [0, 1, -1]
    feed.drop_node("n1")
    assert listing_of(cache, ["n1", "n2", "n4"])[1] == [-1, 1, -1]
    feed.put_node(typed(node("n4")))  # takes n1's row
    assert listing_of(cache, ["n1", "n2", "n4"])[1] == [-1, 1, 0]


def test_a_changed_node_keeps_its_row_and_the_cached_rows():
    feed = feed_with("n1")
    cache = NamesCache(feed)
    first = cache.listing(b'["n1"]', msgspec.json.decode)
    feed.put_node(typed(node("n1", rv="2", labels={"zone": "z1"})))
    again = cache.listing(b'["n1"]', msgspec.json.decode)
    assert again is first and again.rows.tolist() == [0]


def test_a_list_seen_again_is_marked_reused():
    cache = NamesCache(feed_with("n1"))
    assert not cache.listing(b'["n1"]', msgspec.json.decode).reused
    assert cache.listing(b'["n1"]', msgspec.json.decode).reused
    assert not cache.listing(b'["n1","n1"]', msgspec.json.decode).reused


def test_the_cache_keeps_the_last_lists_only():
    feed = feed_with("n1")
    cache = NamesCache(feed, size=2)
    decoded: list[bytes] = []

    def decode(raw: bytes) -> list[str]:
        decoded.append(raw)
        return msgspec.json.decode(raw)

    for raw in (b'["a"]', b'["b"]', b'["a"]', b'["c"]', b'["a"]', b'["b"]'):
        cache.listing(raw, decode)
    assert decoded == [b'["a"]', b'["b"]', b'["c"]', b'["b"]']


names_strategy = st.lists(st.text(max_size=12), max_size=20)


@given(names_strategy, st.data())
def test_prioritize_json_is_byte_for_byte_msgspecs(names, data):
    scores = data.draw(st.lists(st.integers(0, 10), min_size=len(names), max_size=len(names)))
    expected = wire.encode(
        [wire.HostPriority(Host=n, Score=s) for n, s in zip(names, scores, strict=True)]
    )
    listing = Listing(names, np.full(len(names), -1, dtype=np.intp), 0)
    assert listing.priorities_json(np.array(scores, dtype=np.intp)) == expected  # encoded
    listing.reused = True
    assert listing.priorities_json(np.array(scores, dtype=np.intp)) == expected  # joined


def test_prioritize_json_of_awkward_names_is_msgspecs():
    names = ['a"b', "back\\slash", "new\nline", "\x00\x1f", "é\u2028😀", "", "</script>"]
    scores = list(range(len(names)))
    listing = [wire.HostPriority(Host=n, Score=s) for n, s in zip(names, scores, strict=True)]
    joined = wire.encode_priorities(list(map(wire.host_prefix, names)), np.array(scores))
    assert joined == wire.encode(listing)
    assert wire.encode_priorities([], np.zeros(0, dtype=np.intp)) == wire.encode([]) == b"[]"


def example_config():
    return config([{"name": "example", "weight": 1}])


async def test_names_requests_see_nodes_added_and_removed_since_the_last_same_list():
    names = {"Pod": pod(), "NodeNames": ["n1", "n2", "n2", "late"]}
    async with running_extender(example_config()) as ext:
        nodes = [node("n1"), node("n2", labels={AVOID: "true"})]
        await post(ext.url, "filter", {"Pod": pod(), "Nodes": {"items": nodes}})
        _, before = await post(ext.url, "filter", names)
        await post(ext.url, "filter", {"Pod": pod(), "Nodes": {"items": [node("late")]}})
        _, after = await post(ext.url, "filter", names)
        _, scores = await post(ext.url, "prioritize", names)
        ext.feed.drop_node("n1")
        _, dropped = await post(ext.url, "filter", names)
        _, empty = await post(ext.url, "filter", {"Pod": pod(), "NodeNames": []})
    assert before["NodeNames"] == ["n1"]
    assert "not known" in before["FailedAndUnresolvableNodes"]["late"]
    assert after["NodeNames"] == ["n1", "late"]
    assert list(after["FailedAndUnresolvableNodes"]) == ["n2"]
    assert [entry["Host"] for entry in scores] == ["n1", "n2", "n2", "late"]
    assert dropped["NodeNames"] == ["late"]
    assert "not known" in dropped["FailedAndUnresolvableNodes"]["n1"]
    assert empty == {"NodeNames": []}


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b'{"Pod": {}, "NodeNames": ["a", 2]}', "got `int` - at `$.NodeNames[1]`"),
        (b'{"NodeNames": ["a", 2]}', "got `int` - at `$.NodeNames[1]`"),
        (b'{"Pod": {}, "NodeNames": {"a": 1}}', "got `object` - at `$.NodeNames`"),
        (b'{"Pod": {}, "NodeNames": ["a"', "malformed JSON"),
        (b'{"Pod": {}, "NodeNames": null}', "NodeNames or Nodes is required"),
    ],
)
async def test_a_names_list_that_is_not_one_gets_the_strict_decoders_400(body, needle):
    async with running_extender(example_config()) as ext:
        for verb in ("filter", "prioritize"):
            for _ in range(2):  # the second time too: a bad list is never cached
                status, answer = await post(ext.url, verb, body)
                assert status == 400 and needle in answer["error"]
