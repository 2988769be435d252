"""What an agent is: vectorised filters and scores over every node row of a ClusterState.

An agent answers for one pod at a time, but never node by node: ``filter`` returns a
``Filtered`` (a reason code per row: 0 passes) and ``score`` a float vector in [0, 1] per
row, both over all ``state.rows`` rows of the ClusterState (absent rows are ignored by
the caller). The extender server picks the rows of the nodes kube-scheduler asked about;
a ``kubesalvo run`` plugin would take the same arrays for a pod's class.

What an agent needs beyond the state's matrices (usage samples, recent bindings) it
keeps itself, in per-row arrays (``RowArray``) fed by the hooks below, which the
informer feed calls for every change it sees - never from the filter or prioritize
calls, since kube-scheduler sends an extender only the pods it is interested in
(``managedResources``) and an agent must not assume it saw every pod.

The five things an agent writes (see "Writing an agent" in docs/extender.md): its ``name``, typed
``Args`` with validation, ``filter``, ``score``, and the hooks that feed its own arrays
(``on_node``, ``on_node_removed``, ``on_pod``, ``on_bound``); ``start``/``stop`` run any
background work it needs (the safe agent polls metrics.k8s.io).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec
import numpy as np
import numpy.typing as npt

from kubesalvo.core.resources import pod_requests
from kubesalvo.core.state import ClusterState
from kubesalvo.sched.informers.models import Node, Pod, to_api_dict

if TYPE_CHECKING:
    from kubesalvo.sched.client import ApiClient

__all__ = [
    "Agent",
    "AgentError",
    "ArgsError",
    "Clock",
    "Filtered",
    "PodInfo",
    "RowArray",
    "passes_all",
]

Clock = Callable[[], float]


class ArgsError(ValueError):
    """An agent's arguments (or a file they name) are wrong: ``path`` says where."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class AgentError(RuntimeError):
    """An agent could not answer; the server puts its text in the result's ``Error``."""


@dataclass
class Filtered:
    """A filter's answer over all rows: ``codes[row]`` 0 passes, k > 0 failed with
    ``reasons[k - 1]``; codes in ``unresolvable`` are failures preemption cannot fix."""

    codes: npt.NDArray[np.uint8]
    reasons: tuple[str, ...] = ()
    unresolvable: frozenset[int] = frozenset()

    def reason(self, code: int) -> str:
        return self.reasons[code - 1]


def passes_all(state: ClusterState) -> Filtered:
    return Filtered(np.zeros(state.rows, dtype=np.uint8))


@dataclass
class PodInfo:
    """The pod being placed, decoded once and shared by every agent of a request."""

    pod: Pod

    @classmethod
    def from_api(cls, pod: Mapping[str, Any]) -> PodInfo:
        """From an API-shaped dict, as ``kubesalvo.core`` and ``kubesalvo run`` hold pods
        (the entry point for running an agent as a plugin)."""
        return cls(msgspec.convert(pod, Pod))

    @property
    def namespace(self) -> str:
        return self.pod.metadata.namespace or "default"

    @property
    def labels(self) -> dict[str, str]:
        return self.pod.metadata.labels

    @cached_property
    def api(self) -> dict[str, Any]:
        return to_api_dict(self.pod)

    @cached_property
    def requests(self) -> dict[str, int]:
        """What the pod requests, in the scheduler's units (cpu millicores, bytes)."""
        return pod_requests(self.api)

    def requests_any(self, names: frozenset[str]) -> bool:
        """Whether a container or init container names one of ``names`` in its requests
        or limits: kube-scheduler's ``managedResources`` test."""
        spec = self.pod.spec
        for container in (*spec.containers, *spec.init_containers):
            resources = container.resources
            if resources is not None and (
                names.intersection(resources.requests) or names.intersection(resources.limits)
            ):
                return True
        return False


class RowArray:
    """An agent's per-row array that grows with the ClusterState's rows."""

    def __init__(self, dtype: Any, shape: tuple[int, ...] = (), fill: float = 0) -> None:
        self.dtype = dtype
        self.shape = shape
        self.fill = fill
        self.data: np.ndarray = np.full((64, *shape), fill, dtype=dtype)

    def ensure(self, rows: int) -> np.ndarray:
        """The array, with room for at least ``rows`` rows."""
        if rows > len(self.data):
            size = len(self.data)
            while size < rows:
                size *= 2
            grown = np.full((size, *self.shape), self.fill, dtype=self.dtype)
            grown[: len(self.data)] = self.data
            self.data = grown
        return self.data

    def view(self, rows: int) -> np.ndarray:
        """The first ``rows`` rows (grown if needed), for vectorised reads."""
        return self.ensure(rows)[:rows]

    def reset(self, row: int) -> None:
        self.ensure(row + 1)[row] = self.fill


class Agent:
    """Base class: passes every node, scores nothing, ignores every change.

    Subclasses set ``name`` and ``Args`` (a msgspec Struct with defaults, decoded from the
    agent's ``args`` in the extender configuration with unknown fields refused) and
    override what they need.
    """

    name: ClassVar[str] = ""
    Args: ClassVar[type[msgspec.Struct]]

    def __init__(self, args: Any, clock: Clock = time.monotonic) -> None:
        self.args = args
        self.clock = clock

    # --- the answers ------------------------------------------------------------------

    def filter(self, state: ClusterState, pod: PodInfo) -> Filtered:
        return passes_all(state)

    def score(self, state: ClusterState, pod: PodInfo) -> npt.NDArray[np.float64] | None:
        """Scores in [0, 1] per row (higher is better), or None when it does not score."""
        return None

    # --- the feed ---------------------------------------------------------------------

    def on_node(self, state: ClusterState, row: int, node: Node) -> None:
        """A node was added or changed at ``row`` (after the state was updated)."""

    def on_node_removed(self, state: ClusterState, row: int) -> None:
        """The node at ``row`` is gone (the row may be reused by another node)."""

    def on_pod(self, state: ClusterState, old: Pod | None, new: Pod | None, live: bool) -> None:
        """A pod changed (``new`` None: deleted), after the state counted it; ``live`` is
        False while the first list is replayed (old bindings, not news)."""

    def on_bound(self, state: ClusterState, row: int, uid: str, at: float) -> None:
        """The extender's bind verb bound pod ``uid`` to ``row`` (before the watch says so)."""

    # --- background work --------------------------------------------------------------

    async def start(self, client: ApiClient | None, state: ClusterState) -> None:
        """Start background work (``client`` is None without API server credentials)."""

    async def stop(self) -> None:
        """Stop background work."""


def build_args(kind: type[msgspec.Struct], raw: Mapping[str, Any] | None) -> Any:
    """An agent's typed args from the configuration (raises msgspec.ValidationError)."""
    return msgspec.convert(dict(raw or {}), kind, strict=True)
