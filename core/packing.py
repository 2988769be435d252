"""Packing after greedy: emptying the least filled nodes of a burst (issue 29, a first part).

The kernel places a burst pod by pod; the node count it reaches can be above the optimum
(bench/packing). ``empty_least_filled`` takes its assignment and tries, node by node from
the least filled, to move every burst pod of a node onto the other nodes in use, best fit
first; a node is emptied only when all its pods find room, otherwise nothing moves. A
node that held pods before the burst is never a candidate: it cannot be scaled down.

Inputs are plain arrays (no I/O, no cluster objects): the pods' requests and the nodes'
free room per resource, and which pods may go on which node (``feasible``; the caller
gives the production filters' verdict, and leaves pods with placement constraints that
depend on other pods - spread, inter-pod affinity, gangs - immovable). Not yet wired into
``place``: see issue 29.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["empty_least_filled"]


def empty_least_filled(
    requests: npt.NDArray[np.int64],
    free: npt.NDArray[np.int64],
    assigned: npt.NDArray[np.int32],
    feasible: npt.NDArray[np.bool_],
    movable: npt.NDArray[np.bool_],
    held_before: npt.NDArray[np.bool_],
) -> npt.NDArray[np.int32]:
    """A new assignment using no more nodes than ``assigned``, every pod still fitting.

    ``requests``: pods x resources; ``free``: nodes x resources, the room left after the
    burst as ``assigned`` places it; ``assigned``: node per pod, -1 unplaced (unplaced
    pods stay so); ``feasible``: pods x nodes, the filters other than resources;
    ``movable``: pods that may move; ``held_before``: nodes with pods before the burst.
    """
    out = assigned.copy()
    room = free.copy()
    n_nodes = room.shape[0]
    capacity = np.maximum(room + _load(requests, out, n_nodes), 1)
    in_use = np.zeros(n_nodes, dtype=bool)
    in_use[out[out >= 0]] = True
    # Fill of a node: its largest share of any resource taken by the burst.
    fill = (_load(requests, out, n_nodes) / capacity).max(axis=1)
    candidates = [
        int(n) for n in np.argsort(fill, kind="stable") if in_use[n] and not held_before[n]
    ]
    for node in candidates:
        pods = np.flatnonzero(out == node)
        if not movable[pods].all():
            continue
        # Largest first (by the pod's largest share of the node), as first-fit-decreasing.
        pods = pods[np.argsort(-(requests[pods] / capacity[node]).max(axis=1), kind="stable")]
        trial = room.copy()
        # Nodes that held pods before stay in use anyway: their room is free to take.
        targets = in_use | held_before
        targets[node] = False
        moves: list[tuple[int, int]] = []
        for pod in pods:
            fits = targets & feasible[pod] & (trial >= requests[pod]).all(axis=1)
            if not fits.any():
                break
            # Best fit: the target left with the least room in its tightest resource.
            left = ((trial - requests[pod]) / capacity).min(axis=1)
            target = int(np.flatnonzero(fits)[np.argmin(left[fits])])
            trial[target] -= requests[pod]
            moves.append((int(pod), target))
        else:
            trial[node] += requests[pods].sum(axis=0)
            room = trial
            in_use[node] = False
            for moved, target in moves:
                out[moved] = target
    return out


def _load(
    requests: npt.NDArray[np.int64], assigned: npt.NDArray[np.int32], n_nodes: int
) -> npt.NDArray[np.int64]:
    """Per node and resource, the requests of the pods ``assigned`` to it."""
    load = np.zeros((n_nodes, requests.shape[1]), dtype=np.int64)
    placed = assigned >= 0
    np.add.at(load, assigned[placed], requests[placed])
    return load
