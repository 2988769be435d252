"""Open-loop creation at a fixed rate, and how far a scheduler kept up with it.

``create_paced`` sends pod ``i`` at ``start + i / rate`` whatever happened to the earlier
ones (a steady arrival schedule, as users' workloads arrive, not as fast as possible): a
slow answer does not delay the next create. Up to ``in_flight`` requests are open at once;
when the API server falls behind that far, sends slip, and the slip of each send behind its
schedule is the creator's own lag, reported with the results so that a run whose creator
could not keep the schedule is seen as such.

``keep_up`` says how far a scheduler kept up with the arrivals: the bind rate while pods
were arriving against the rate they arrived at, the backlog left when the last pod was
created, and how long that backlog took to drain.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Sequence
from typing import Any

from kubesalvo.sched.bench.podwatch import Created
from kubesalvo.sched.bench.results import latency_summary
from kubesalvo.sched.bench.workload import pod_key
from kubesalvo.sched.cluster.api import ApiClient, Object

DEFAULT_IN_FLIGHT = 256
# A scheduler keeps up when it binds at least this share of the arrival rate meanwhile.
KEEP_UP_SHARE = 0.95


def parse_rate(text: str) -> float:
    """``--rate``: pods per second, a positive number."""
    try:
        rate = float(text)
    except ValueError:
        rate = 0.0
    if not rate > 0 or rate == float("inf"):
        raise ValueError(f"--rate {text!r}: give pods per second, a positive number")
    return rate


def parse_rates(text: str) -> list[float]:
    """``--rates 25%,50%,90%``: shares of the measured raw-bind ceiling, in (0, 100]%,
    returned as fractions (0.25, ...) in the order given."""
    shares = []
    for part in (p.strip() for p in text.split(",")):
        number = part.removesuffix("%")
        try:
            share = float(number) / 100
        except ValueError:
            share = 0.0
        if not part.endswith("%") or not 0 < share <= 1:
            raise ValueError(
                f"--rates {text!r}: give percentages of the raw-bind ceiling, each in (0, 100]%, "
                "comma-separated (e.g. 25%,50%,90%)"
            )
        shares.append(share)
    if not shares:
        raise ValueError("--rates: give at least one percentage")
    return shares


def schedule(count: int, rate: float) -> list[float]:
    """Seconds after the start at which each of ``count`` pods is due."""
    return [i / rate for i in range(count)]


async def create_paced(
    client: ApiClient,
    pods: Sequence[Object],
    rate: float,
    created: Created,
    lag: list[float],
    in_flight: int = DEFAULT_IN_FLIGHT,
) -> None:
    """Creates ``pods`` in order at ``rate`` per second, recording send and answer times in
    ``created`` and each send's lag behind its due time in ``lag``; raises on a refusal."""
    slots = asyncio.Semaphore(in_flight)
    failures: list[BaseException] = []
    tasks: set[asyncio.Task[None]] = set()

    async def create(pod: Object, key: str) -> None:
        try:
            namespace = pod["metadata"].get("namespace") or "default"
            await client.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
            created.answered[key] = created.last = time.monotonic()
        except Exception as error:
            failures.append(error)
        finally:
            slots.release()

    start = created.first = time.monotonic()
    try:
        for pod, due in zip(pods, schedule(len(pods), rate), strict=True):
            if failures:
                raise failures[0]
            wait = start + due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await slots.acquire()
            key = pod_key(pod)
            created.sent[key] = now = time.monotonic()
            lag.append(max(0.0, now - start - due))
            task = asyncio.create_task(create(pod, key))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if failures:
        raise failures[0]


def creator_summary(rate: float, count: int, created: Created, lag: list[float]) -> dict[str, Any]:
    """The schedule the creator was given and how closely it held it."""
    span = created.last - created.first
    return {
        "offered_pods_per_second": round(rate, 2),
        "pods": count,
        "created": len(created.answered),
        "achieved_pods_per_second": round((len(created.answered) - 1) / span, 2)
        if span > 0
        else 0.0,
        "lag_seconds": latency_summary(lag),
    }


def keep_up(create_times: Sequence[float], bind_times: Sequence[float]) -> dict[str, Any]:
    """How far binding kept up with creation; both sorted, seconds since the clock started.

    ``bind_share`` is the bind rate over the creation window (first to last create) over
    the create rate in it; ``backlog_at_last_create`` the pods created but not yet bound
    when the last one was created; ``drain_seconds`` the time from the last create to the
    last bind.
    """
    if len(create_times) < 2:
        return {}
    first, last = create_times[0], create_times[-1]
    window = last - first
    created_in = len(create_times)
    bound_in = bisect.bisect_right(bind_times, last) - bisect.bisect_left(bind_times, first)
    share = bound_in / created_in if created_in else 0.0
    drain = (bind_times[-1] - last) if bind_times else None
    return {
        "create_window_seconds": round(window, 3),
        "bind_share": round(share, 4),
        "backlog_at_last_create": created_in - bisect.bisect_right(bind_times, last),
        "drain_seconds": round(drain, 3) if drain is not None else None,
        "kept_up": share >= KEEP_UP_SHARE and len(bind_times) >= created_in,
    }
