"""Extender latency: filter + prioritize at N nodes, kubesalvo's agents against a baseline.

Starts ``kubesalvo extender`` (agents example, policy, safe, congestion; no API server:
its node cache is filled by one full-node request, as the informers would) and the
minimal pure-Python extender of ``baseline.py`` doing the same checks, each in its own
process on a loopback port. Then, for each node-cache mode, it sends ``--rounds`` pairs
of filter + prioritize requests for one pod (kube-scheduler sends them one after the
other) and reports p50/p99 of each verb and of the pair, in milliseconds.

    python3 bench/extender/latency.py --nodes 5000 --rounds 300    # the issue's figure
    python3 bench/extender/latency.py --nodes 200 --rounds 20      # a quick correctness run

The issue's figure sends the same list of every node each time (kube-scheduler with
``percentageOfNodesToScore: 100``, prioritize given the whole list too), which the
extender's names cache answers from its bytes. ``--rotating`` adds what kube-scheduler
sends by default: a moving window of its share of the nodes (500 of 5,000), and to
prioritize only the nodes filter passed, so that no list repeats.

Load on the machine changes these figures: report the load average with them (printed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import yaml

HERE = Path(__file__).resolve().parent
RULES = [
    {
        "name": "team-a",
        "podSelector": {"matchLabels": {"team": "a"}},
        "requiredNodeSelector": {"matchLabels": {"pool": "a"}},
        "preferredNodeSelector": {"matchLabels": {"zone": "z1"}},
    }
]


def make_nodes(count: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    nodes = []
    for i in range(count):
        name = f"node-{i:05d}"
        labels = {
            "kubernetes.io/hostname": name,
            "pool": rng.choice("abc"),
            "zone": rng.choice(["z1", "z2", "z3"]),
        }
        if rng.random() < 0.05:
            labels["example.kubesalvo.io/avoid"] = "true"
        annotations = {}
        if rng.random() < 0.9:
            annotations["kubesalvo.io/usage-cpu"] = f"{rng.randint(0, 16000)}m"
            annotations["kubesalvo.io/usage-memory"] = f"{rng.randint(1, 60)}Gi"
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "uid": f"uid-{i}",
                    "resourceVersion": str(1000 + i),
                    "labels": labels,
                    "annotations": annotations,
                },
                "spec": {},
                "status": {
                    "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                    "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 250}.{i % 250}"}],
                },
            }
        )
    return nodes


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "namespace": "default", "uid": "pod-uid", "labels": {"team": "a"}},
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "nginx",
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
            }
        ]
    },
}


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_up(session: aiohttp.ClientSession, url: str) -> None:
    for _ in range(300):
        try:
            async with session.get(f"{url}/healthz") as answer:
                if answer.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} never came up")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def scored_share(count: int) -> int:
    """How many feasible nodes kube-scheduler looks for among ``count`` by default
    (``percentageOfNodesToScore`` unset: 50% less 1% per 125 nodes, at least 5% and at
    least 100 nodes), the size of the name lists its extenders get."""
    if count < 100:
        return count
    percent = max(5, 50 - count // 125)
    return max(100, count * percent // 100)


def rotating_bodies(names: list[str]) -> Iterator[bytes]:
    """Filter bodies as kube-scheduler sends them with its default share: each a window
    of ``scored_share`` names, the next one starting where the last one ended."""
    size, start = scored_share(len(names)), 0
    while True:
        window = [names[(start + i) % len(names)] for i in range(size)]
        start = (start + size) % len(names)
        yield json.dumps({"Pod": POD, "NodeNames": window}).encode()


async def measure(
    session, url: str, bodies: dict[str, bytes] | Iterator[bytes], rounds: int
) -> dict[str, float]:
    """p50/p99 of filter, prioritize and the pair. ``bodies``: the same two bodies every
    round, or a filter body per round whose passing names prioritize then gets."""
    times: dict[str, list[float]] = {"filter": [], "prioritize": [], "pair": []}
    for _ in range(rounds):
        pair = 0.0
        body = bodies["filter"] if isinstance(bodies, dict) else next(bodies)
        for verb in ("filter", "prioritize"):
            began = time.perf_counter()
            async with session.post(f"{url}/{verb}", data=body) as answer:
                text = await answer.read()
                assert answer.status == 200, text
            took = (time.perf_counter() - began) * 1000
            times[verb].append(took)
            pair += took
            if verb == "filter" and isinstance(bodies, dict):
                body = bodies["prioritize"]
            elif verb == "filter":
                passed = json.loads(text)["NodeNames"]
                body = json.dumps({"Pod": POD, "NodeNames": passed}).encode()
        times["pair"].append(pair)
    return {
        f"{key} {q}": round(percentile(values, p), 3)
        for key, values in times.items()
        for q, p in (("p50", 0.5), ("p99", 0.99))
    }


async def run(nodes_count: int, rounds: int, rotating: bool = False) -> dict:
    nodes = make_nodes(nodes_count)
    full = json.dumps({"Pod": POD, "Nodes": {"items": nodes}}).encode()
    node_names = [n["metadata"]["name"] for n in nodes]
    names = json.dumps({"Pod": POD, "NodeNames": node_names}).encode()
    with tempfile.TemporaryDirectory() as work:
        config = Path(work) / "extender.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "agents": [
                        {"name": "example"},
                        {"name": "policy", "args": {"rules": RULES}},
                        {"name": "safe", "args": {"useMetricsApi": False}},
                        {"name": "congestion"},
                    ]
                }
            )
        )
        ours, base = free_port(), free_port()
        env = {**os.environ, "KUBERNETES_SERVICE_HOST": ""}
        processes = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kubesalvo.sched.cli",
                    "extender",
                    f"--config={config}",
                    f"--listen=127.0.0.1:{ours}",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),
            subprocess.Popen(
                [sys.executable, str(HERE / "baseline.py"), f"--port={base}"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),
        ]
        try:
            results: dict = {"nodes": nodes_count, "rounds": rounds, "loadavg": os.getloadavg()}
            timeout = aiohttp.ClientTimeout(total=300)
            passing: dict[str, set[str]] = {}
            async with aiohttp.ClientSession(timeout=timeout) as session:
                for server, port in (("kubesalvo", ours), ("baseline", base)):
                    url = f"http://127.0.0.1:{port}"
                    await wait_up(session, url)
                    # One full-node request fills each node cache (the informers' job).
                    async with session.post(f"{url}/filter", data=full) as answer:
                        assert answer.status == 200, await answer.text()
                    async with session.post(f"{url}/filter", data=names) as answer:
                        passing[server] = set((await answer.json())["NodeNames"])
                    for mode, body in (("nodeCacheCapable", names), ("full nodes", full)):
                        bodies = {"filter": body, "prioritize": body}
                        results[f"{server}, {mode}"] = await measure(session, url, bodies, rounds)
                    if rotating:
                        windows = rotating_bodies(node_names)
                        mode = f"names, {scored_share(nodes_count)} rotating"
                        results[f"{server}, {mode}"] = await measure(session, url, windows, rounds)
            results["loadavg after"] = os.getloadavg()
            # The two do the same checks: the same nodes must pass.
            results["same nodes pass"] = passing["kubesalvo"] == passing["baseline"]
            results["nodes passing"] = len(passing["kubesalvo"])
            return results
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--rotating",
        action="store_true",
        help="also send names as kube-scheduler does by default: a window of "
        "percentageOfNodesToScore's share of the nodes, moving each round, and prioritize "
        "only the names filter passed (lists never repeat, as in a cluster)",
    )
    args = parser.parse_args()
    results = asyncio.run(run(args.nodes, args.rounds, args.rotating))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{args.nodes} nodes, {args.rounds} rounds, load average {results['loadavg']}")
    print(f"same nodes pass in both: {results['same nodes pass']} ({results['nodes passing']})")
    for key, figures in results.items():
        if isinstance(figures, dict):
            line = "  ".join(f"{name} {value:8.3f}" for name, value in figures.items())
            print(f"{key:32s} {line}  (ms)")


if __name__ == "__main__":
    main()
