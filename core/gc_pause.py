"""A context manager that pauses the cyclic garbage collector during bulk work.

Generating a large cluster, or placing a burst, allocates millions of small dicts and
lists that all live until the work ends, none of them in a reference cycle. Each
allocation burst triggers collector passes that walk all of them for nothing: pausing the
collector more than halves the time to build 50,000 nodes, and saves several percent of a
burst.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
