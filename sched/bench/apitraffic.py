"""What a run asked of the API server: the requests it served and the watch events it sent
over the measured window, per bound pod, from the API server's own counters.

The API server's ``/metrics`` is read just before the clock starts and just after the last
bind (both reads outside the window whose CPU is reported). Requests are counted by verb
and resource (``POST pods/binding``, ``WATCH pods``), watch events by resource (``watch
events: pods``): every watcher's copy counts, so a scheduler that watches more kinds, or
watches pods it does not need, shows here. Everyone's traffic is in it (the controllers',
kwok's, the bench's own watch): compare contenders of one run, not the absolute figures.
"""

from __future__ import annotations

import asyncio
import re
import time

from kubesalvo.sched.cluster.api import ApiClient, ApiError

REQUESTS = "apiserver_request_total"
WATCH_EVENTS = "apiserver_watch_events_total"
# Watchers the watch cache closed because their buffer stayed full (they resume).
TERMINATED = "apiserver_terminated_watchers_total"
# Per-pod figures below this are left out (a handful of requests in the whole run).
SMALLEST = 0.01

_SAMPLE = re.compile(r"^(\w+)\{(.*)\} (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


async def scrape(client: ApiClient) -> dict[str, float]:
    """The API server's request and watch-event counters now (see ``counts``)."""
    async with client.session.get(client.server + "/metrics") as response:
        raw = await response.read()
        if response.status >= 300:
            raise ApiError(response.status, "", raw.decode(errors="replace")[:300])
    return counts(raw.decode())


def counts(text: str) -> dict[str, float]:
    """Prometheus text -> {"VERB resource[/subresource]": requests, "watch events:
    resource": events, "terminated watchers: resource": watchers}, summed over the other
    labels (codes, groups, scopes)."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith((REQUESTS + "{", WATCH_EVENTS + "{", TERMINATED + "{")):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, labels, value = match.groups()
        label = dict(_LABEL.findall(labels))
        if name == REQUESTS:
            resource = label.get("resource", "")
            if label.get("subresource"):
                resource += "/" + label["subresource"]
            key = f"{label.get('verb', '')} {resource}"
        else:  # the resource label, or kind in older releases
            what = "watch events" if name == WATCH_EVENTS else "terminated watchers"
            key = f"{what}: {label.get('resource') or label.get('kind', '').lower()}"
        totals[key] = totals.get(key, 0.0) + float(value)
    return totals


def per_pod(before: dict[str, float], after: dict[str, float], pods: int) -> dict[str, float]:
    """What the window added, per pod, largest first; figures under SMALLEST left out."""
    if pods <= 0:
        return {}
    added = {key: (after[key] - before.get(key, 0.0)) / pods for key in after}
    kept = {key: round(value, 3) for key, value in added.items() if value >= SMALLEST}
    return dict(sorted(kept.items(), key=lambda item: (-item[1], item[0])))


# Verbs that change nothing: left out when judging whether the API server has settled.
READS = frozenset({"GET", "LIST", "WATCH", "CONNECT"})


def writes(totals: dict[str, float]) -> float:
    """The requests among ``totals`` (``counts``) that change something."""
    return sum(
        value
        for key, value in totals.items()
        if ":" not in key and key.split(" ", 1)[0] not in READS
    )


def terminated(before: dict[str, float], after: dict[str, float]) -> dict[str, int]:
    """Watchers the API server closed between the two readings, by resource."""
    prefix = "terminated watchers: "
    added = {
        key.removeprefix(prefix): int(after[key] - before.get(key, 0.0))
        for key in after
        if key.startswith(prefix)
    }
    return {resource: count for resource, count in added.items() if count > 0}


async def wait_quiet(
    client: ApiClient, timeout: float, rate: float = 10.0, calm: int = 2, step: float = 1.0
) -> tuple[bool, float]:
    """Waits until the API server has served at most ``rate`` writes a second for ``calm``
    steps in a row, or ``timeout``: what the last run left behind (the garbage collector's
    deletes, the controllers' events and status updates) is done before the next clock
    starts. Returns (settled, the seconds it took)."""
    began = time.monotonic()
    last = writes(await scrape(client))
    still = 0
    while time.monotonic() - began < timeout:
        await asyncio.sleep(step)
        now = writes(await scrape(client))
        still = still + 1 if now - last <= rate * step else 0
        last = now
        if still >= calm:
            return True, time.monotonic() - began
    return False, time.monotonic() - began
