"""Same-process A/B of the bounded search of a class's only pod (issue 28): run from the
worktree's root as ``PYTHONPATH=. python3 bench/bounded_ab.py mixed|equal NODES PODS ROUNDS``.

``mixed``: the burst of ``kubesalvo simulate --workload mixed --nodes NODES --pods PODS``
on its generated cluster; ``equal``: NODES identical empty nodes and PODS one-pod classes
of distinct requests, where every row ties and no bound can prune. Each round plans the
burst (nothing committed) with the full scan, then with the bounded search, one seed;
the figures are the smallest thread CPU time of ``plan`` per pod over the rounds, the
searches made, those given up for the scan, the rows the searches visited per search,
the twin groups, the searches that scanned the rows in no group instead of visiting
cells, the tied rows counted in groups per search, and whether both placed every pod
alike. A third run per round is the search with the scans' use of the twin groups off
(``set_twin_scan``: slot rebuilds and spread passes filter and score every row),
``*_no_twin_scan``, and ``twin_scanned_rows`` the feasible rows the scans took their
group's terms for with it on. A fourth, ``*_no_order_cache``, is the search with the
group orders of spread classes computed for every class (``set_order_cache`` off), and
``orders_copied`` the classes that copied theirs with it on. One JSON object on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from kubesalvo.core import _place, place
from kubesalvo.core.place import plan
from kubesalvo.core.state import ClusterState
from kubesalvo.core.ties import TieBreak
from kubesalvo.sched.simulate.run import load_state
from kubesalvo.sched.simulate.source import ClusterChoice, build_cluster


def mixed(nodes: int, pods: int) -> tuple[ClusterState, list[dict[str, Any]]]:
    cluster = build_cluster(ClusterChoice(workload="mixed", nodes=nodes, pods=pods))
    burst = [p for p in cluster.snapshot.pods if not (p.get("spec") or {}).get("nodeName")]
    return load_state(cluster.snapshot), burst


def equal(nodes: int, pods: int) -> tuple[ClusterState, list[dict[str, Any]]]:
    state = ClusterState(max(1, nodes))
    for i in range(nodes):
        name = f"n{i}"
        state.add_node(
            {
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
            }
        )
    requests = [{"cpu": f"{100 + i}m", "memory": f"{128 + i}Mi"} for i in range(pods)]
    burst = [
        {
            "metadata": {"name": f"p{i}", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": r}}]},
        }
        for i, r in enumerate(requests)
    ]
    return state, burst


def compare(kind: str, nodes: int, pods: int, rounds: int) -> dict[str, Any]:
    state, burst = (mixed if kind == "mixed" else equal)(nodes, pods)
    kernels: list[Any] = []
    kernel_class = place.BurstKernel

    def record(*args: Any) -> Any:
        kernels.append(kernel_class(*args))
        return kernels[-1]

    out: dict[str, Any] = {"workload": kind, "nodes": nodes, "pods": len(burst)}
    placed: dict[str, list[str | None]] = {}
    before = _place.set_bounded_search(True)
    twin_scan = _place.set_twin_scan(True)
    orders = _place.set_order_cache(True)
    place.BurstKernel = record  # type: ignore[misc]
    variants = (
        ("scan", False, True, True),
        ("bounded_no_twin_scan", True, False, True),
        ("bounded_no_order_cache", True, True, False),
        ("bounded", True, True, True),
    )
    try:
        for _ in range(rounds):
            for key, on, twins, cache in variants:
                _place.set_bounded_search(on)
                _place.set_twin_scan(twins)
                _place.set_order_cache(cache)
                kernels.clear()
                cpu0 = time.thread_time()
                result = plan(state, burst, ties=TieBreak(1))
                cpu = (time.thread_time() - cpu0) / max(1, len(burst)) * 1e6
                out[f"{key}_cpu_us_per_pod"] = min(out.get(f"{key}_cpu_us_per_pod", cpu), cpu)
                placed[key] = result.nodes
                if key == "bounded":
                    out["orders_copied"] = sum(k.orders_copied for k in kernels)
                    out["twin_scanned_rows"] = sum(k.twin_scanned for k in kernels)
                    searches = sum(k.bounded_pods for k in kernels)
                    gaveup = sum(k.bounded_gaveup for k in kernels)
                    rows = sum(k.bounded_rows for k in kernels)
                    out["searches"] = searches
                    out["searches_given_up"] = gaveup
                    out["twin_groups"] = max((k.twin_groups for k in kernels), default=0)
                    out["twin_scans"] = sum(k.twin_scans for k in kernels)
                    out["twin_ties_per_search"] = (
                        sum(k.twin_ties for k in kernels) / searches if searches else 0.0
                    )
                    out["rows_per_search"] = rows / searches if searches else 0.0
    finally:
        place.BurstKernel = kernel_class  # type: ignore[misc]
        _place.set_bounded_search(*before)
        _place.set_twin_scan(twin_scan)
        _place.set_order_cache(orders)
    out["same_placements"] = all(placed[key] == placed["scan"] for key, *_ in variants)
    return out


def main(argv: list[str]) -> int:
    kind, nodes, pods, rounds = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    if kind not in ("mixed", "equal"):
        raise SystemExit(f"workload must be mixed or equal, not {kind!r}")
    print(json.dumps(compare(kind, nodes, pods, rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
