"""The nodes of a filter or prioritize request, and a cache of the name lists seen lately.

With ``nodeCacheCapable: true`` kube-scheduler sends the same ``NodeNames`` list request
after request; at thousands of nodes, decoding the names and looking each one up cost
more than the agents' answers. ``NamesCache`` keeps the last few lists, keyed by their
raw JSON bytes, with what the verbs need of them (a ``Listing``). The rows of a cached
list are looked up again once the feed's ``layout`` has moved (a node got a row or lost
one), never the names: they are the bytes' own.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from kubesalvo.sched.extender import wire
from kubesalvo.sched.extender.feed import NodeFeed

__all__ = ["CACHED_LISTS", "Listing", "NamesCache"]

# kube-scheduler sends one list at a time in a steady cluster (all feasible nodes);
# a few entries cover lists that alternate (filter's and prioritize's, a few pod kinds).
CACHED_LISTS = 4


class Listing:
    """A request's node names in its order, with their rows in the state (-1: unknown)."""

    __slots__ = ("_prefixes", "array", "layout", "names", "rows")

    def __init__(self, names: list[str], rows: npt.NDArray[np.intp], layout: int) -> None:
        self.names = names
        self.array: npt.NDArray[np.object_] = np.array(names, dtype=object)  # picks many
        self.array.flags.writeable = False
        self.rows = rows
        self.rows.flags.writeable = False
        self.layout = layout  # the feed's layout the rows were looked up at
        self._prefixes: list[bytes] | None = None

    def prefixes(self) -> list[bytes]:
        """Each name's HostPriority JSON up to its score (built once per listing)."""
        if self._prefixes is None:
            self._prefixes = list(map(wire.host_prefix, self.names))
        return self._prefixes


class NamesCache:
    """The last ``size`` name lists of names-only requests, by their JSON bytes."""

    def __init__(self, feed: NodeFeed, size: int = CACHED_LISTS) -> None:
        self.feed = feed
        self.size = size
        self._lists: dict[bytes, Listing] = {}  # oldest first

    def listing(self, raw: bytes, decode: Callable[[bytes], list[str]]) -> Listing:
        """The listing of a raw ``NodeNames`` list; ``decode`` turns a list not seen
        lately into names (and raises ``BadRequest`` for one that is not)."""
        found = self._lists.pop(raw, None)
        if found is None:
            names = decode(raw)
            found = Listing(names, self.feed.rows_of(names), self.feed.layout)
        elif found.layout != self.feed.layout:
            found.rows = self.feed.rows_of(found.names)
            found.rows.flags.writeable = False
            found.layout = self.feed.layout
        self._lists[raw] = found  # the most recent last
        while len(self._lists) > self.size:
            del self._lists[next(iter(self._lists))]
        return found
