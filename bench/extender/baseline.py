"""The baseline of the extender benchmark: a minimal pure-Python extender doing the same checks.

What a hand-written extender typically is: aiohttp, ``json.loads`` of the whole body, and a
loop over the nodes with plain dicts. It applies the checks the benchmark configures for
kubesalvo's agents, node by node:

* example: nodes labelled ``example.kubesalvo.io/avoid=true`` fail; score = free pod slots;
* policy: pods labelled ``team=a`` need ``pool=a`` nodes, prefer ``zone=z1``;
* safe: usage from the ``kubesalvo.io/usage-cpu``/``-memory`` annotations (one sample, so
  mean + k x std is the sample) plus the pod's request must stay under 80% of allocatable;
  score = headroom;
* congestion: nothing is bound in the benchmark, so every node passes with score 1.

Names-only requests are answered from the nodes of earlier full-node requests (its cache).
Run: ``python bench/extender/baseline.py --port 8899``.
"""

from __future__ import annotations

import argparse
import json

from aiohttp import web

CACHE: dict[str, dict] = {}
AVOID = "example.kubesalvo.io/avoid"


def quantity(text: str) -> float:
    """cpu in millicores or memory in bytes, for the suffixes the benchmark uses."""
    units = {"m": 0.001, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


def pod_request(pod: dict) -> tuple[float, float]:
    cpu = memory = 0.0
    for container in pod.get("spec", {}).get("containers", []):
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu += quantity(requests.get("cpu", "0")) * 1000
        memory += quantity(requests.get("memory", "0"))
    return cpu, memory


def check(pod: dict, node: dict) -> tuple[str | None, float]:
    """(failure reason or None, score 0-10) of one node, averaged over the four checks."""
    meta = node["metadata"]
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    allocatable = node["status"]["allocatable"]
    team = (pod["metadata"].get("labels") or {}).get("team")
    if labels.get(AVOID) == "true":
        return "example: avoided", 0
    if team == "a" and labels.get("pool") != "a":
        return "policy: pool", 0
    cpu, memory = pod_request(pod)
    scores = []
    if "kubesalvo.io/usage-cpu" in annotations:
        used_cpu = quantity(annotations["kubesalvo.io/usage-cpu"]) * 1000 + cpu
        used_memory = quantity(annotations.get("kubesalvo.io/usage-memory", "0")) + memory
        ratio = max(
            used_cpu / (quantity(allocatable["cpu"]) * 1000),
            used_memory / quantity(allocatable["memory"]),
        )
        if ratio > 0.8:
            return "safe: usage", 0
        scores.append(max(0.0, (0.8 - ratio) / 0.8))
    else:
        scores.append(0.5)
    scores.append(1.0)  # example: no pod bound, every slot free
    if team == "a":
        scores.append(1.0 if labels.get("zone") == "z1" else 0.0)
    scores.append(1.0)  # congestion
    return None, round(10 * sum(scores) / len(scores))


def nodes_of(args: dict) -> tuple[list[dict], bool]:
    if args.get("NodeNames") is not None:
        return [CACHE[name] for name in args["NodeNames"] if name in CACHE], False
    items = args["Nodes"]["items"]
    for node in items:
        CACHE[node["metadata"]["name"]] = node
    return items, True


async def filter_(request: web.Request) -> web.Response:
    args = json.loads(await request.read())
    nodes, full = nodes_of(args)
    passed, failed = [], {}
    for node in nodes:
        reason, _ = check(args["Pod"], node)
        if reason is None:
            passed.append(node)
        else:
            failed[node["metadata"]["name"]] = reason
    result: dict = {"FailedNodes": failed}
    if full:
        result["Nodes"] = {"items": passed}
    else:
        result["NodeNames"] = [node["metadata"]["name"] for node in passed]
    return web.Response(text=json.dumps(result), content_type="application/json")


async def prioritize(request: web.Request) -> web.Response:
    args = json.loads(await request.read())
    nodes, _ = nodes_of(args)
    result = [
        {"Host": node["metadata"]["name"], "Score": check(args["Pod"], node)[1]} for node in nodes
    ]
    return web.Response(text=json.dumps(result), content_type="application/json")


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    app = web.Application(client_max_size=256 * 1024 * 1024)
    app.router.add_post("/filter", filter_)
    app.router.add_post("/prioritize", prioritize)
    app.router.add_get("/healthz", healthz)
    web.run_app(app, host="127.0.0.1", port=port, print=None)


if __name__ == "__main__":
    main()
