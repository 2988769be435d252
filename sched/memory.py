"""What a running scheduler's memory is made of: the ``/debug/memory`` page.

kube-scheduler answers the same question with ``/debug/pprof/heap``; here it is the
process's resident and peak memory, the garbage collector's counts, the number of live
objects of each type (the containers the collector tracks: dicts, lists, instances; those
alive when the informers synced are frozen out of its passes and only counted), and,
when the process runs with ``PYTHONTRACEMALLOC=N`` (or ``python -X tracemalloc=N``), the
source lines holding the most memory. Comparing two readings taken minutes apart shows
what grows.

A reading walks the whole heap, which takes seconds on a large cluster's scheduler: the
debug server computes it in a worker thread (the event loop keeps binding and renewing
its Lease meanwhile, the thread giving up the GIL every switch interval), one at a time,
and the count by type stops after ``WALK_BUDGET_SECONDS`` (``countComplete`` says so).
"""

from __future__ import annotations

import gc
import resource
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from typing import Any


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * resource.getpagesize()


def _type_name(obj: object) -> str:
    kind = type(obj)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


# Allocations (less deallocations) between two young collections; Python's default is 700.
YOUNG_THRESHOLD = 20_000


def collect_young_less_often() -> None:
    """Collect the young generation every ``YOUNG_THRESHOLD`` allocations, from the start
    of ``kubesalvo run`` (and ``kubesalvo extender``).

    Listing the cluster at start and every burst after it make objects that live a while
    (the state's records; a burst's pods until their binds end, a fraction of a second):
    collected every 700 allocations, most were still alive and promoted, and so many
    promotions brought on full collections over the whole heap, which freed nothing. At
    240 pods/s onto 5,000 nodes that was one every 5-6 s, 160-310 ms each (the event loop
    stood still meanwhile): 1.4 s in a 30 s run whose scheduler took 8.5 s of CPU.
    """
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


def freeze_startup_heap() -> int:
    """Collect once, then keep every object alive now out of the cyclic collector's passes;
    returns how many objects were frozen.

    Called once the informers have synced: the nodes, the pods and the state built from
    them live as long as the process, and every full collection walked them all again.
    Frozen objects are still freed when their last reference goes; only a reference cycle
    among them would never be collected. In the 240 pods/s run above, the collector's time
    fell from 2.1 s to 1.4-1.5 s with the freeze alone, and to 0.4-0.5 s with
    ``collect_young_less_often`` too, no full collection while pods arrived
    (bench/RESULTS.md).
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


class CollectorPauses:
    """Times each pass of the cyclic collector (the event loop stands still meanwhile):
    ``observe(generation, seconds)`` after each, from ``gc.callbacks`` while started."""

    def __init__(self, observe: Callable[[int, float], None]) -> None:
        self.observe = observe
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.observe(info["generation"], time.perf_counter() - self._began)

    def start(self) -> None:
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def stop(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)


# How long one reading may spend counting objects by type; past it the counts cover the
# objects walked so far.
WALK_BUDGET_SECONDS = 5.0
# Objects counted between two looks at the clock.
_WALK_STRIDE = 10_000


def _count_by_type(
    objects: list[object], budget: float, clock: Callable[[], float]
) -> tuple[Counter[str], int]:
    """Counts by type name of the first objects walked within ``budget`` seconds, and how
    many were counted."""
    by_type: Counter[str] = Counter()
    deadline = clock() + budget
    counted = 0
    while counted < len(objects):
        chunk = objects[counted : counted + _WALK_STRIDE]
        by_type.update(_type_name(o) for o in chunk)
        counted += len(chunk)
        if clock() >= deadline:
            break
    return by_type, counted


def memory_report(
    top: int = 25,
    budget: float = WALK_BUDGET_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """The reading (JSON-ready); ``top`` bounds each list, ``budget`` the seconds spent
    counting objects by type."""
    top = max(1, min(top, 500))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    objects = gc.get_objects()
    by_type, counted = _count_by_type(objects, budget, clock)
    report: dict[str, Any] = {
        "rssBytes": _resident_bytes(),
        "peakRssBytes": peak if sys.platform != "darwin" else peak // 1024,
        "gcCounts": list(gc.get_count()),
        "gcCollections": [s["collections"] for s in gc.get_stats()],
        "trackedObjects": len(objects),
        # alive at the startup freeze (freeze_startup_heap): not in the counts by type
        "frozenObjects": gc.get_freeze_count(),
        "countedObjects": counted,
        "countComplete": counted == len(objects),
        "objectsByType": [{"type": name, "count": n} for name, n in by_type.most_common(top)],
    }
    del objects
    if tracemalloc.is_tracing():
        current, traced_peak = tracemalloc.get_traced_memory()
        snapshot = tracemalloc.take_snapshot().filter_traces(
            (tracemalloc.Filter(False, tracemalloc.__file__),)
        )
        report["traced"] = {
            "currentBytes": current,
            "peakBytes": traced_peak,
            "lines": [
                {"where": f"{stat.traceback[0].filename}:{stat.traceback[0].lineno}",
                 "bytes": stat.size, "blocks": stat.count}
                for stat in snapshot.statistics("lineno")[:top]
            ],
        }  # fmt: skip
    else:
        report["traced"] = None
    return report
