"""The nodes of a filter or prioritize request, and a cache of the name lists seen lately.

With ``nodeCacheCapable: true`` and every node scored (``percentageOfNodesToScore: 100``,
or under 100 nodes) kube-scheduler sends the same ``NodeNames`` list request after
request while the feasible nodes stay the same; at thousands of nodes, decoding the
names, looking each one up and encoding an answer node by node cost more than the
agents' answers. ``NamesCache`` keeps the last few lists, keyed by their raw JSON bytes,
with what the verbs need of them (a ``Listing``: the names as a numpy array, their rows,
and, once a list comes again, each name's JSON as the answers write it, so that answers
are joined rather than encoded). The rows of a cached list are looked up again once the
feed's ``layout`` has moved (a node got a row or lost one), never the names: they are
the bytes' own. With its default share kube-scheduler sends a moving window of the nodes
instead, no list repeats, and every request decodes and encodes as it would uncached.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import numpy as np
import numpy.typing as npt

from kubesalvo.sched.extender import wire
from kubesalvo.sched.extender.combine import FilterAnswer
from kubesalvo.sched.extender.feed import NodeFeed

__all__ = ["CACHED_LISTS", "Listing", "NamesCache"]

# A few entries cover lists that alternate: filter's and prioritize's (the nodes filter
# passed), pods of a few kinds.
CACHED_LISTS = 4


class Listing:
    """A request's node names in its order, with their rows in the state (-1: unknown).

    Its answers are encoded as usual the first time; a listing the cache hands out again
    joins them from each name's JSON, built once (building it costs more than one
    encoding, so a list seen once, as when kube-scheduler's lists rotate, never does)."""

    __slots__ = (
        "_first",
        "_keys",
        "_prefixes",
        "_unique",
        "array",
        "layout",
        "names",
        "reused",
        "rows",
    )

    def __init__(self, names: list[str], rows: npt.NDArray[np.intp], layout: int) -> None:
        self.names = names
        self.array: npt.NDArray[np.object_] = np.array(names, dtype=object)  # picks many
        self.array.flags.writeable = False
        self.rows = rows
        self.rows.flags.writeable = False
        self.layout = layout  # the feed's layout the rows were looked up at
        self.reused = False  # handed out again by the cache
        self._prefixes: list[bytes] | None = None
        self._keys: npt.NDArray[np.object_] | None = None
        self._unique: bool | None = None  # whether no name repeats: not known yet
        self._first: npt.NDArray[np.bool_] | None = None  # names' first positions

    def priorities_json(self, scores: npt.NDArray[np.intp]) -> bytes:
        """The HostPriorityList of ``scores`` (one per name), byte for byte what encoding
        ``HostPriority`` Structs gives."""
        if not self.reused:
            return wire.encode(list(map(wire.HostPriority, self.names, scores.tolist())))
        if self._prefixes is None:
            self._prefixes = list(map(wire.host_prefix, self.names))
        return wire.encode_priorities(self._prefixes, scores)

    def filter_json(self, answer: FilterAnswer, result: wire.FilterResult) -> bytes:
        """The filter answer's JSON: ``result`` (the passing nodes, as names or objects)
        with the failing nodes' two maps, byte for byte what encoding it with those maps
        as dicts gives."""
        soft, hard = answer.resolvable, ~answer.resolvable
        if not self.reused:
            texts = np.array(answer.texts, dtype=object)
            return wire.encode(
                msgspec.structs.replace(
                    result,
                    FailedNodes=self._map(answer.failing[soft], texts[answer.text_of[soft]]),
                    FailedAndUnresolvableNodes=self._map(
                        answer.failing[hard], texts[answer.text_of[hard]]
                    ),
                )
            )
        failed = self._failures(answer.failing[soft], answer.text_of[soft], answer.texts)
        unresolvable = self._failures(answer.failing[hard], answer.text_of[hard], answer.texts)
        return wire.encode_filter_result(result, failed, unresolvable)

    def _map(
        self, positions: npt.NDArray[np.intp], texts: npt.NDArray[np.object_]
    ) -> dict[str, str]:
        # zipped lists: a Python step per failing node cost more than the rest
        return dict(zip(self.array[positions].tolist(), texts.tolist(), strict=True))

    def _failures(
        self, positions: npt.NDArray[np.intp], text_of: npt.NDArray[np.intp], texts: list[str]
    ) -> bytes:
        """The JSON map of the names at ``positions`` to ``texts[text_of[i]]``, as a dict
        keeps them: a repeated name once, where it came first (its text is the same each
        time: one name, one row)."""
        first = self._first_appearances()
        if first is not None:
            keep = first[positions]
            positions, text_of = positions[keep], text_of[keep]
        if self._keys is None:
            self._keys = np.array(list(map(wire.json_key, self.names)), dtype=object)
        return wire.encode_failures(self._keys[positions].tolist(), text_of, texts)

    def _first_appearances(self) -> npt.NDArray[np.bool_] | None:
        """Which positions hold a name's first appearance; None when no name repeats."""
        if self._unique is None:
            count = len(self.names)
            # names are unique when their rows are (one name, one row)
            if count == 0 or (self.rows.min() >= 0 and len(np.unique(self.rows)) == count):
                self._unique = True
            else:
                first = dict(zip(reversed(self.names), range(count - 1, -1, -1), strict=True))
                self._unique = len(first) == count
                self._first = np.zeros(count, dtype=bool)
                self._first[list(first.values())] = True
        return None if self._unique else self._first


class NamesCache:
    """The last ``size`` name lists of names-only requests, by their JSON bytes."""

    def __init__(self, feed: NodeFeed, size: int = CACHED_LISTS) -> None:
        self.feed = feed
        self.size = size
        # (raw JSON, listing), the most recent last. A scan, not a dict: comparing a few
        # lists (lengths first) costs less than hashing tens of kilobytes per request.
        self._lists: list[tuple[bytes, Listing]] = []

    def listing(self, raw: bytes, decode: Callable[[bytes], list[str]]) -> Listing:
        """The listing of a raw ``NodeNames`` list; ``decode`` turns a list not seen
        lately into names (and raises ``BadRequest`` for one that is not)."""
        found = None
        for index, (seen, listing) in enumerate(self._lists):
            if seen == raw:
                found = listing
                found.reused = True
                del self._lists[index]
                break
        if found is None:
            names = decode(raw)
            found = Listing(names, self.feed.rows_of(names), self.feed.layout)
        if found.layout != self.feed.layout:
            found.rows = self.feed.rows_of(found.names)
            found.rows.flags.writeable = False
            found.layout = self.feed.layout
        self._lists.append((raw, found))
        del self._lists[: -self.size]
        return found
