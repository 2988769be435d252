"""A context manager that pauses the cyclic garbage collector during bulk generation.

Generating a large cluster allocates millions of small dicts and lists, none of them in a
reference cycle. Each allocation burst triggers collector passes that walk all of them for
nothing; pausing the collector more than halves the time to build 50,000 nodes.
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
