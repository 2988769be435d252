"""What a running scheduler's memory is made of: the ``/debug/memory`` page.

kube-scheduler answers the same question with ``/debug/pprof/heap``; here it is the
process's resident and peak memory, the garbage collector's counts, the number of live
objects of each type (the containers the collector tracks: dicts, lists, instances), and,
when the process runs with ``PYTHONTRACEMALLOC=N`` (or ``python -X tracemalloc=N``), the
source lines holding the most memory. Comparing two readings taken minutes apart shows
what grows.
"""

from __future__ import annotations

import gc
import resource
import sys
import tracemalloc
from collections import Counter
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


def memory_report(top: int = 25) -> dict[str, Any]:
    """The reading (JSON-ready); ``top`` bounds each list."""
    top = max(1, min(top, 500))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    objects = gc.get_objects()
    by_type = Counter(_type_name(o) for o in objects)
    report: dict[str, Any] = {
        "rssBytes": _resident_bytes(),
        "peakRssBytes": peak if sys.platform != "darwin" else peak // 1024,
        "gcCounts": list(gc.get_count()),
        "gcCollections": [s["collections"] for s in gc.get_stats()],
        "trackedObjects": len(objects),
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
